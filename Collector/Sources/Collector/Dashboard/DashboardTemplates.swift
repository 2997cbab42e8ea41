// The dashboard's HTML templates: Templates/*.mustache, resources of this target, parsed once into
// one MustacheLibrary. Mustache escapes every {{value}} for HTML; {{{value}}} (unescaped) is kept for
// markup this code made itself (the SVG of Charts.swift, the modal's script), never for an upload's
// text. Decision 0031.
import Foundation
import Mustache

struct DashboardTemplates: Sendable {
    /// Parsed when the router is made (CollectorServer.makeRouter), so that a template that does not
    /// parse stops the collector at its start rather than at a page's first request.
    static let shared: DashboardTemplates = {
        do {
            guard let folder = Bundle.module.url(forResource: "Templates", withExtension: nil) else {
                throw TemplateError(file: "Templates", reason: "the folder is not among the target's resources")
            }
            return try DashboardTemplates(folder: folder)
        } catch {
            fatalError("the dashboard's templates: \(error)")
        }
    }()

    struct TemplateError: Error, CustomStringConvertible {
        var file: String
        var reason: String
        var description: String { "\(file): \(reason)" }
    }

    let library: MustacheLibrary
    /// The templates' names (file names without .mustache), sorted.
    let names: [String]

    init(folder: URL) throws {
        var library = MustacheLibrary()
        var names: [String] = []
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        for file in files where file.pathExtension == "mustache" {
            let name = file.deletingPathExtension().lastPathComponent
            do {
                library.register(try MustacheTemplate(string: try String(contentsOf: file, encoding: .utf8)), named: name)
            } catch {
                throw TemplateError(file: file.lastPathComponent, reason: "\(error)")
            }
            names.append(name)
        }
        self.library = library
        self.names = names.sorted()
    }

    /// `view` through the template `name`. Mustache reads a view's stored properties by name (Mirror).
    func render(_ view: Any, _ name: String) -> String {
        guard let html = library.render(view, withTemplate: name) else {
            preconditionFailure("no dashboard template \(name)")
        }
        return html
    }
}

// The dashboard's HTML templates: Templates/*.mustache, compiled into the binary (SwiftPM's
// embedInCode, listed in Package.swift) and parsed once into one MustacheLibrary. Mustache escapes
// every {{value}} for HTML; {{{value}}} (unescaped) is kept for markup this code made itself (the
// SVG of Charts.swift, the modal's script), never for an upload's text. Decision 0031.
import Foundation
import Mustache

struct DashboardTemplates: Sendable {
    /// The templates by name (the file name without .mustache).
    static let sources: [(name: String, bytes: [UInt8])] = [
        ("alert-banner", PackageResources.alert_banner_mustache), ("connect-modal", PackageResources.connect_modal_mustache),
        ("error", PackageResources.error_mustache), ("event", PackageResources.event_mustache),
        ("issue", PackageResources.issue_mustache), ("issues", PackageResources.issues_mustache),
        ("layout", PackageResources.layout_mustache), ("logs", PackageResources.logs_mustache),
        ("not-found", PackageResources.not_found_mustache), ("pages", PackageResources.pages_mustache),
        ("unauthorized", PackageResources.unauthorized_mustache),
    ]

    /// Parsed when the router is made (CollectorServer.makeRouter), so that a template that does not
    /// parse stops the collector at its start rather than at a page's first request.
    static let shared: DashboardTemplates = {
        do {
            return try DashboardTemplates(sources: sources)
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
    /// The templates' names, sorted.
    let names: [String]

    init(sources: [(name: String, bytes: [UInt8])]) throws {
        var library = MustacheLibrary()
        for (name, bytes) in sources {
            do {
                library.register(try MustacheTemplate(string: String(decoding: bytes, as: UTF8.self)), named: name)
            } catch {
                throw TemplateError(file: name + ".mustache", reason: "\(error)")
            }
        }
        self.library = library
        names = sources.map(\.name).sorted()
    }

    /// `view` through the template `name`. Mustache reads a view's stored properties by name (Mirror).
    func render(_ view: Any, _ name: String) -> String {
        guard let html = library.render(view, withTemplate: name) else {
            preconditionFailure("no dashboard template \(name)")
        }
        return html
    }
}

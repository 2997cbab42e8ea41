// Names for people (STYLE 17): the short form of a demangled Swift name, as Swift's backtracer and
// `swift-demangle --simplified` print it ("Pagination.pageItems(_:)", "closure #1 in process(_:)"),
// worked out from the full demangled text: the runtime's swift_demangle has no option for it (its
// flags argument is reserved), and reports that arrive already demangled have only the text.
// Module names, argument and return types, closure signatures, where clauses and private
// discriminators go; wrapper prefixes shrink ("specialized", "partial apply for", "thunk for").
// The full name stays in JSON; Tests/CrashReportModelTests/Corpus/simplified-names.tsv holds what
// swift-demangle --simplified prints for real symbols, and the tests compare.
import Foundation

public enum SwiftNames {
    /// `swift-demangle --simplified`'s form of a fully demangled name; other names (C, C++) unchanged.
    public static func simplified(_ demangled: String) -> String {
        // C and C++ names ("std::vector<int>::at(unsigned long)") are not Swift's to shorten.
        guard !demangled.isEmpty, !demangled.includes("::") else { return demangled }
        var text = removingDiscriminators(demangled)
        var prefix = ""
        func addPrefix(_ word: String) {
            if word == "specialized ", prefix.hasSuffix("specialized ") { return }
            prefix += word
        }
        wrappers: while true {
            // Regular expressions only behind a cheap test: grouping runs this for every frame received.
            if text.hasPrefix("("),
               let range = text.range(of: #"^\([0-9]+\) (suspend|await) resume partial function for "#, options: .regularExpression) {
                text.removeSubrange(range)
                continue
            }
            for (word, replacement) in [("merged ", ""), ("partial apply forwarder for ", "partial apply for "),
                                        ("dispatch thunk of ", "dispatch thunk of ")] where text.hasPrefix(word) {
                text.removeFirst(word.count)
                addPrefix(replacement)
                continue wrappers
            }
            for word in ["function signature specialization ", "generic specialization ", "generic partial specialization ",
                         "generic not re-abstracted specialization "] where text.hasPrefix(word) {
                var rest = text.dropFirst(word.count)
                if rest.hasPrefix("<") { rest = rest.dropFirst(balancedLength(String(rest))) }
                guard rest.hasPrefix(" of ") else { break }
                text = String(rest.dropFirst(4))
                addPrefix("specialized ")
                continue wrappers
            }
            for word in ["reabstraction thunk helper ", "reabstraction thunk "] where text.hasPrefix(word) {
                var rest = text.dropFirst(word.count)
                if rest.hasPrefix("<") { rest = rest.dropFirst(balancedLength(String(rest))).drop(while: { $0 == " " }) }
                guard rest.hasPrefix("from ") else { break }
                rest = rest.dropFirst(5)
                let from = topLevelSplit(String(rest), " to ").first ?? String(rest)
                return prefix + "thunk for " + from
            }
            break
        }
        if text.hasPrefix("protocol witness for ") {
            let body = String(text.dropFirst("protocol witness for ".count))
            let parts = topLevelSplit(body, " in conformance ")
            guard parts.count == 2 else { return prefix + "protocol witness for " + entity(body) }
            let conformance = topLevelSplit(parts[1], " : ").first ?? parts[1]
            return prefix + "protocol witness for " + entity(parts[0]) + " in conformance " + type(conformance)
        }
        for word in ["outlined copy of ", "outlined consume of ", "outlined destroy of ", "outlined retain of ", "outlined release of ",
                     "outlined assign with take of ", "outlined assign with copy of ", "outlined init with take of ",
                     "outlined init with copy of ", "type metadata accessor for ", "type metadata completion function for ",
                     "type metadata instantiation function for ", "type metadata for ", "canonical specialized generic type metadata accessor for "]
        where text.hasPrefix(word) {
            return prefix + word + type(String(text.dropFirst(word.count)))
        }
        if text.includes(" value witness for "), let range = text.range(of: #"^[A-Za-z]+ value witness for "#, options: .regularExpression) {
            let witness = text[range].dropLast(" value witness for ".count)
            return prefix + witness + " for " + type(String(text[range.upperBound...]))
        }
        if text.hasPrefix("outlined variable") || text.hasPrefix("default argument"),
           let range = text.range(of: #"^(outlined variable|default argument) #?[0-9]+ of "#, options: .regularExpression) {
            return prefix + text[range] + entity(String(text[range.upperBound...]))
        }
        if text.includes(" for "), let glue = witnessTableGlue(text) { return prefix + glue }
        return prefix + entity(text)
    }

    /// True for an async function or one of its resume points (the simplified name does not say).
    public static func isAsync(_ demangled: String) -> Bool {
        if demangled.hasPrefix("("), demangled.range(of: #"^\([0-9]+\) (suspend|await) resume partial function for "#, options: .regularExpression) != nil {
            return true
        }
        // The function's own signature: the text after the last top-level " in " (closures) or the whole.
        let segments = topLevelSplit(removingDiscriminators(demangled), " in ")
        return segments.contains { segment in
            let parts = topLevelSplit(segment, " -> ")
            return parts.count > 1 && (parts[parts.count - 2].hasSuffix(" async") || parts[parts.count - 2].includes(") async throws"))
        }
    }

    /// Witness-table and key-path glue: "… for type T and conformance T : P in M" → "… for type T and conformance T".
    private static func witnessTableGlue(_ text: String) -> String? {
        func withoutConformance(_ text: String) -> String {
            let parts = topLevelSplit(text, " : ")
            return parts.count > 1 && parts.last!.includes(" in ") ? parts.dropLast().joined(separator: " : ") : text
        }
        for word in ["lazy protocol witness table accessor for type ", "lazy protocol witness table cache variable for type "]
        where text.hasPrefix(word) {
            let parts = topLevelSplit(String(text.dropFirst(word.count)), " and conformance ")
            guard parts.count == 2 else { return nil }
            return word + type(parts[0]) + " and conformance " + type(topLevelSplit(parts[1], " : ").first ?? parts[1])
        }
        for word in ["base witness table accessor for ", "associated type witness table accessor for ",
                     "instantiation function for generic protocol witness table for ", "protocol witness table for ",
                     "associated conformance descriptor for "] where text.hasPrefix(word) {
            let parts = topLevelSplit(withoutConformance(String(text.dropFirst(word.count))), " in ")
            let first = topLevelSplit(parts[0], " : ").map { type($0) }.joined(separator: " : ")
            return word + first + (parts.count > 1 ? " in " + type(parts.dropFirst().joined(separator: " in ")) : "")
        }
        for word in ["key path getter for ", "key path setter for ", "key path equality operator for ", "key path hash function for "]
        where text.hasPrefix(word) {
            let parts = topLevelSplit(String(text.dropFirst(word.count)), " : ")
            guard parts.count >= 2 else { return nil }
            return word + type(parts[0]) + " : " + type(parts.last!)
        }
        return nil
    }

    // MARK: Entities

    /// "closure #1 (Int) -> () in static Swift.Foo.bar<A where …>(_: A) -> ()" → "closure #1 in static Foo.bar<A>(_:)".
    static func entity(_ text: String) -> String {
        let segments = topLevelSplit(text, " in ")
        var out: [String] = []
        var index = 0
        while index < segments.count {
            let segment = segments[index]
            out.append(simplifiedSegment(segment, isOutermost: index == segments.count - 1, isContext: index > 0))
            // "init() -> Flags #1 in f() -> () in Flags #1 in f()": a local type's name in a return
            // type runs on to the next " in "; that part belongs to the return type.
            let returned = topLevelSplit(segment, " -> ")
            index += 1
            if returned.count > 1, let type = returned.last, !type.includes("."), let first = type.first, first.isLetter,
               !isGenericParameter(type) {
                while index < segments.count, segments[index].includes("#"),
                      segments[index].range(of: #"#[0-9]+$"#, options: .regularExpression) != nil { index += 1 }
                index += 1
            }
        }
        return out.joined(separator: " in ")
    }

    private static func simplifiedSegment(_ segment: String, isOutermost: Bool, isContext: Bool) -> String {
        // Closures: the signature goes.
        if segment.includes("closure #"), let range = segment.range(of: #"^(@objc )?(implicit )?closure #[0-9]+"#, options: .regularExpression) {
            return String(segment[range])
        }
        var text = segment
        var head = ""
        for word in ["static ", "class "] where text.hasPrefix(word) {
            head += word
            text.removeFirst(word.count)
        }
        if text.hasPrefix("(extension in "), let close = text.range(of: "):") {
            text = String(text[close.upperBound...])
        }
        // Name path up to its generic parameters, arguments or type annotation.
        var name = ""
        var rest = Substring(text)
        while let character = rest.first {
            if character == "<" {
                // An operator's "<" ("static Int.< infix") is part of the name.
                if let last = name.last, !(last.isLetter || last.isNumber || last == "_" || last == ">") {
                    name.append(character); rest.removeFirst(); continue
                }
                if name.isEmpty { name.append(character); rest.removeFirst(); continue }
                let length = balancedLength(String(rest))
                name += genericParameters(String(rest.prefix(length)))
                rest = rest.dropFirst(length)
                continue
            }
            if character == "(" || rest.hasPrefix(" : ") || rest.hasPrefix(" (") { break }
            name.append(character)
            rest.removeFirst()
        }
        if isOutermost { name = withoutModule(name, isContext: isContext) }
        if rest.hasPrefix(" (") {   // a local function: "groups #1 (Swift.String) -> …"
            rest.removeFirst()
            name += " "
        }
        if rest.hasPrefix("(") {
            let length = balancedLength(String(rest), open: "(", close: ")")
            name += labels(String(rest.prefix(length).dropFirst().dropLast()))
        }
        return head + name
    }

    /// "<A, B where A: P>" → "<A, B>"; "< where A: P>" → "<>".
    private static func genericParameters(_ text: String) -> String {
        let inner = text.dropFirst().dropLast()
        let parameters = topLevelSplit(String(inner), " where ").first ?? String(inner)
        return "<" + (inner.hasPrefix(" where ") || inner.hasPrefix("where ") ? "" : parameters) + ">"
    }

    /// "_: Swift.Int, bounds: Swift.Range<Swift.Int>" → "(_:bounds:)"; an unlabelled argument is "_:".
    private static func labels(_ arguments: String) -> String {
        let trimmed = arguments.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return "()" }
        var out = "("
        for argument in topLevelSplit(trimmed, ", ") {
            if let colon = argument.range(of: ": "), isLabel(argument[..<colon.lowerBound]) {
                out += argument[..<colon.lowerBound] + ":"
            } else {
                out += "_:"
            }
        }
        return out + ")"
    }

    private static func isLabel(_ text: Substring) -> Bool {
        !text.isEmpty && text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "`" }
    }

    /// The first component of a qualified name is its module: "Swift.Array.append" → "Array.append".
    /// A bare module (a top-level closure's context) becomes empty, as swift-demangle prints it.
    private static func withoutModule(_ name: String, isContext: Bool) -> String {
        guard let firstCharacter = name.first, firstCharacter.isLetter || firstCharacter == "_" else { return name }
        var index = name.startIndex
        while index < name.endIndex, name[index].isLetter || name[index].isNumber || name[index] == "_" { index = name.index(after: index) }
        if index == name.endIndex { return isContext ? "" : name }   // "closure #5 in Module"; a C name stays
        if name[index] == "." { return String(name[name.index(after: index)...]) }
        return name
    }

    /// A type with the module dropped from each qualified name in it: "[Swift.String : Mod.Value]?" → "[String : Value]?".
    static func type(_ text: String) -> String {
        if topLevelSplit(text, " in ").count > 1 { return entity(text) }
        guard let paths = Patterns.qualifiedPath else { return text }
        var out = text
        if out.includes("(extension in ") {
            out = out.replacingOccurrences(of: #"\(extension in [A-Za-z0-9_]+\):"#, with: "", options: .regularExpression)
        }
        if out.includes("< where ") { out = out.replacingOccurrences(of: #"< where [^<>]*>"#, with: "<>", options: .regularExpression) }
        let text = out
        let matches = paths.matches(in: text, range: NSRange(text.startIndex..., in: text))
        for match in matches.reversed() {
            guard let range = Range(match.range, in: out) else { continue }
            let path = out[range]
            let module = path.prefix(while: { $0 != "." })
            if isGenericParameter(String(module)) { continue }
            out.replaceSubrange(range, with: path.dropFirst(module.count + 1))
        }
        return out
    }

    private enum Patterns {
        static let qualifiedPath = try? NSRegularExpression(pattern: #"(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+"#)
    }

    private static func isGenericParameter(_ word: String) -> Bool {
        guard let first = word.first, first.isUppercase, first.isASCII else { return false }
        return word.dropFirst().allSatisfy(\.isNumber)
    }

    static func removingDiscriminators(_ text: String) -> String {
        guard text.includes(" in _") else { return text }
        return text.replacingOccurrences(of: #"\(([^()\s]+) in _[0-9A-F]{32}\)"#, with: "$1", options: .regularExpression)
    }

    // MARK: Nesting-aware text helpers

    /// The length of the bracketed group at the start of `text` ("<…>" by default), "->" not counted.
    static func balancedLength(_ text: String, open: Character = "<", close: Character = ">") -> Int {
        var depth = 0
        var previous: Character = " "
        for (offset, character) in text.enumerated() {
            if character == open { depth += 1 }
            if character == close, !(close == ">" && previous == "-") {
                depth -= 1
                if depth == 0 { return offset + 1 }
            }
            previous = character
        }
        return text.count
    }

    /// `text` split at each `separator` outside (), [], <> and {}.
    static func topLevelSplit(_ text: String, _ separator: String) -> [String] {
        var parts: [String] = []
        var depth = 0
        var current = ""
        var previous: Character = " "
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if depth == 0, text[index...].hasPrefix(separator) {
                parts.append(current)
                current = ""
                index = text.index(index, offsetBy: separator.count)
                previous = " "
                continue
            }
            switch character {
            case "(", "[", "{": depth += 1
            case ")", "]", "}": depth = max(0, depth - 1)
            case "<" where previous != " " && previous != ".": depth += 1   // "a < b" operators stay outside
            case ">" where previous != "-" && depth > 0: depth -= 1
            default: break
            }
            current.append(character)
            previous = character
            index = text.index(after: index)
        }
        parts.append(current)
        return parts
    }
}

// Secrets as an operator hands them in: ingest tokens (each bound to the apps it may write for, or
// to any app), read from flags, the environment or files, and the dashboard password's strength.
// Files keep secrets out of `ps` and shell history; flags still work.
import Foundation

/// An ingest token and the apps it may write for.
public struct IngestToken: Sendable, Hashable {
    public var secret: String
    /// nil: any app.
    public var bundleIDs: Set<String>?

    public init(secret: String, bundleIDs: Set<String>? = nil) {
        self.secret = secret
        self.bundleIDs = bundleIDs
    }

    /// `SECRET` (any app, as before tokens were bound) or `BUNDLE_ID[,BUNDLE_ID…]:SECRET`; `*:SECRET`
    /// is any app too. A plain secret therefore holds no ':'.
    public init(parsing text: String) throws {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard let colon = text.firstIndex(of: ":") else {
            guard !text.isEmpty else { throw SecretsError("an empty ingest token") }
            self.init(secret: text)
            return
        }
        let secret = String(text[text.index(after: colon)...])
        let apps = text[..<colon].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !secret.isEmpty else { throw SecretsError("no secret after the apps in \"\(text[..<colon]):…\"") }
        guard !apps.isEmpty else { throw SecretsError("no app before ':' in a token (BUNDLE_ID[,BUNDLE_ID…]:SECRET)") }
        self.init(secret: secret, bundleIDs: apps.contains("*") ? nil : Set(apps))
    }

    /// A tokens file: one token per line in the form above; blank lines and `#` comments are skipped.
    public static func parseFile(_ contents: String) throws -> [IngestToken] {
        try contents.split(whereSeparator: \.isNewline).enumerated().compactMap { number, line in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty, !text.hasPrefix("#") else { return nil }
            do { return try IngestToken(parsing: text) } catch let error as SecretsError {
                throw SecretsError("line \(number + 1): \(error.message)")
            }
        }
    }

    /// The set of secrets and the apps of those bound, as CollectorConfiguration takes them. A
    /// secret given twice with different apps may write for both.
    public static func configuration(_ tokens: [IngestToken]) -> (secrets: Set<String>, bundleIDs: [String: Set<String>]) {
        var anyApp: Set<String> = []
        var bound: [String: Set<String>] = [:]
        for token in tokens {
            if let apps = token.bundleIDs { bound[token.secret, default: []].formUnion(apps) } else { anyApp.insert(token.secret) }
        }
        for secret in anyApp { bound[secret] = nil }
        return (Set(tokens.map(\.secret)), bound)
    }
}

public struct SecretsError: Error, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum Secrets {
    /// A file's first line, as `--dashboard-password-file` reads it (a trailing newline is not part of it).
    public static func firstLine(ofFile path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw SecretsError("cannot read \(path)") }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    }

    public static func contents(ofFile path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw SecretsError("cannot read \(path)") }
        return String(decoding: data, as: UTF8.self)
    }

    public static let minimumPasswordLength = 12
    /// Passwords that are first in every guessing list; refused whatever their length.
    static let commonPasswords: Set<String> = [
        "secret", "password", "passw0rd", "password1", "password123", "123456", "12345678", "123456789", "1234567890",
        "qwerty", "qwertyuiop", "letmein", "admin", "administrator", "changeme", "welcome", "dashboard", "collector",
        "crash-collector", "iloveyou", "monkey", "dragon", "trustno1", "secretsecret", "passwordpassword",
    ]

    /// Why a dashboard password would be guessed, or nil when it will do.
    public static func weakness(ofPassword password: String) -> String? {
        if commonPasswords.contains(password.lowercased()) { return "it is on every list of common passwords" }
        if password.count < minimumPasswordLength { return "it is shorter than \(minimumPasswordLength) characters" }
        if Set(password).count < 4 { return "it repeats too few characters" }
        return nil
    }
}

// Finding the file that holds a module's symbols, trusting only files whose GNU build-id matches
// the record's. Order: the module at its recorded path; directories given by the user (as plain
// folders and as `.build-id/xx/yyyy.debug` trees); /usr/lib/debug; a debuginfod server
// (DEBUGINFOD_URLS) through elfutils' own client library.
import CrashReportModel
import Foundation

public struct DebugFileLocator: Sendable {
    public struct Options: Sendable {
        /// Folders searched by build-id (`.build-id/xx/yyyy[.debug]`) and by file name.
        public var debugDirectories: [String]
        /// Also search /usr/lib/debug (distribution debug packages).
        public var useSystemDebugDirectory: Bool
        /// Also ask debuginfod when DEBUGINFOD_URLS is set.
        public var useDebuginfod: Bool
        /// Try the module's recorded path first. A server symbolicating other hosts' reports turns
        /// this off: the path names a file on the crashed host, not on this one.
        public var useRecordedPath: Bool

        public init(debugDirectories: [String] = [], useSystemDebugDirectory: Bool = true, useDebuginfod: Bool = true,
                    useRecordedPath: Bool = true) {
            self.debugDirectories = debugDirectories
            self.useSystemDebugDirectory = useSystemDebugDirectory
            self.useDebuginfod = useDebuginfod
            self.useRecordedPath = useRecordedPath
        }
    }

    /// What was found for a module.
    public struct Location: Sendable, Equatable {
        /// The file to read symbols from (a binary, or a separate `.debug` file).
        public var path: String
        /// True if it is the module's own file at its recorded path.
        public var isRecordedPath: Bool
    }

    public enum Failure: Error, Sendable, Equatable {
        case notFound
        case buildIDMismatch(fileBuildID: String)
    }

    public var options: Options

    public init(options: Options = .init()) {
        self.options = options
    }

    /// Folders that libdwfl should search for a stripped binary's separate debug file.
    public var debugSearchPath: [String] {
        options.debugDirectories + (options.useSystemDebugDirectory ? ["/usr/lib/debug"] : [])
    }

    public func locate(_ module: CrashRecord.Module) -> Result<Location, Failure> {
        locate(buildID: module.buildID, path: module.path)
    }

    /// The file for the module with `buildID` that was loaded from `path` (on the crashed host).
    /// A build-id that is not plain hex is never found: it would be a path in the build-id trees.
    public func locate(buildID: BuildID, path: String) -> Result<Location, Failure> {
        var mismatch: Failure?
        if options.useRecordedPath, FileManager.default.fileExists(atPath: path) {
            let onDisk = BuildID(elfFileAtPath: path)
            if buildID.isEmpty || onDisk == buildID {
                return .success(Location(path: path, isRecordedPath: true))
            }
            mismatch = .buildIDMismatch(fileBuildID: onDisk?.hex ?? "none")
        }
        guard !buildID.isEmpty, buildID.hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return .failure(mismatch ?? .notFound)
        }

        let name = fileName(of: path)
        for directory in options.debugDirectories {
            for candidate in buildIDPaths(in: directory, buildID) + [directory + "/" + name, directory + "/" + name + ".debug"]
            where matches(candidate, buildID) {
                return .success(Location(path: candidate, isRecordedPath: false))
            }
        }
        if options.useSystemDebugDirectory {
            for candidate in buildIDPaths(in: "/usr/lib/debug", buildID) where matches(candidate, buildID) {
                return .success(Location(path: candidate, isRecordedPath: false))
            }
        }
        if options.useDebuginfod, let path = Debuginfod.shared?.fetch(buildID), matches(path, buildID) {
            return .success(Location(path: path, isRecordedPath: false))
        }
        return .failure(mismatch ?? .notFound)
    }

    private func buildIDPaths(in directory: String, _ buildID: BuildID) -> [String] {
        let hex = buildID.hex
        guard hex.count > 2 else { return [] }
        let base = "\(directory)/.build-id/\(hex.prefix(2))/\(hex.dropFirst(2))"
        return [base + ".debug", base]
    }

    private func matches(_ path: String, _ buildID: BuildID) -> Bool {
        FileManager.default.fileExists(atPath: path) && BuildID(elfFileAtPath: path) == buildID
    }
}

/// elfutils' debuginfod client (libdebuginfod.so.1, the library libdw itself uses), loaded at run
/// time so that nothing links against it. Fetches debug info first, then the executable.
final class Debuginfod: @unchecked Sendable {
    private typealias Begin = @convention(c) () -> OpaquePointer?
    private typealias Find = @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32

    private let client: OpaquePointer
    private let findDebuginfo: Find
    private let findExecutable: Find
    private let lock = NSLock()

    static let shared: Debuginfod? = Debuginfod()

    private init?() {
        guard let urls = ProcessInfo.processInfo.environment["DEBUGINFOD_URLS"], !urls.isEmpty,
              let library = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL),
              let begin = dlsym(library, "debuginfod_begin"),
              let findDebuginfo = dlsym(library, "debuginfod_find_debuginfo"),
              let findExecutable = dlsym(library, "debuginfod_find_executable"),
              let client = unsafeBitCast(begin, to: Begin.self)() else { return nil }
        self.client = client
        self.findDebuginfo = unsafeBitCast(findDebuginfo, to: Find.self)
        self.findExecutable = unsafeBitCast(findExecutable, to: Find.self)
    }

    /// The cached file's path, or nil. The client keeps downloads in $DEBUGINFOD_CACHE_PATH.
    func fetch(_ buildID: BuildID) -> String? {
        lock.lock()
        defer { lock.unlock() }
        for find in [findDebuginfo, findExecutable] {
            var path: UnsafeMutablePointer<CChar>?
            // A build-id length of 0 means: the bytes are the hex text.
            let fd = buildID.hex.withCString { hex in
                hex.withMemoryRebound(to: UInt8.self, capacity: buildID.hex.utf8.count) { find(client, $0, 0, &path) }
            }
            if fd >= 0 {
                close(fd)
                if let path {
                    defer { free(path) }
                    return String(cString: path)
                }
            }
        }
        return nil
    }
}

// Source paths as people read them: DWARF joins a compilation directory and a file name that are
// often both relative to a build root (glibc: "./nptl" + "./nptl/pthread_create.c"), which reads
// "./nptl/./nptl/pthread_create.c" when joined naively. Used where symbolication builds paths and
// where grouping reads them (reports from older senders still carry the doubled form).
public enum SourcePath {
    /// `file` resolved against a compilation directory: a file already under that (relative)
    /// directory is not joined twice; the result is normalised.
    public static func joined(directory: String, file: String) -> String {
        if file.hasPrefix("/") { return normalised(file) }
        let base = normalised(directory), name = normalised(file)
        if base.isEmpty || base == "." { return name }
        if !base.hasPrefix("/"), name == base || name.hasPrefix(base + "/") { return name }
        return normalised(base + "/" + name)
    }

    /// "./csu/../sysdeps/x.h" → "sysdeps/x.h", "a//b" → "a/b", "nptl/nptl/f.c" → "nptl/f.c" (a
    /// relative path whose leading folders repeat). Absolute paths keep their leading "/".
    public static func normalised(_ path: String) -> String {
        guard path.includes("/") else { return path }
        let absolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == "..", let last = parts.last, last != ".." { parts.removeLast(); continue }
            parts.append(part)
        }
        if !absolute {
            // A relative directory joined onto a name that already starts with it.
            for length in stride(from: parts.count / 2, through: 1, by: -1)
            where parts.count > 2 * length && Array(parts[0..<length]) == Array(parts[length..<(2 * length)]) {
                parts.removeFirst(length)
                break
            }
        }
        let joined = parts.joined(separator: "/")
        return absolute ? "/" + joined : joined
    }
}

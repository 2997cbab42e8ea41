// Symbol names for people: Swift names through libswiftCore's swift_demangle, C++ names through
// libstdc++'s __cxa_demangle (looked up at run time: it is loaded in every Foundation process but
// not linked by name), anything else as it is.
import Foundation
import Glibc

@_silgen_name("swift_demangle")
private func _swift_demangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int,
    _ outputBuffer: UnsafeMutablePointer<CChar>?, _ outputBufferSize: UnsafeMutablePointer<Int>?,
    _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?

public enum Demangler {
    private typealias CXADemangle = @convention(c) (
        UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    private static let cxaDemangle: CXADemangle? = {
        // A null handle is RTLD_DEFAULT on glibc: search every loaded object.
        dlsym(nil, "__cxa_demangle").map { unsafeBitCast($0, to: CXADemangle.self) }
    }()

    public static func isSwiftSymbol(_ name: String) -> Bool {
        name.hasPrefix("$s") || name.hasPrefix("$S") || name.hasPrefix("_$s") || name.hasPrefix("_T0") || name.hasPrefix("$e")
    }

    /// The readable form of `symbol`, or `symbol` itself when it is not mangled.
    public static func demangle(_ symbol: String) -> String {
        if isSwiftSymbol(symbol) {
            let demangled = symbol.withCString { pointer -> String? in
                guard let result = _swift_demangle(pointer, strlen(pointer), nil, nil, 0) else { return nil }
                defer { free(result) }
                return String(cString: result)
            }
            return demangled ?? symbol
        }
        if symbol.hasPrefix("_Z"), let cxaDemangle {
            var status: Int32 = 0
            let demangled = symbol.withCString { pointer -> String? in
                guard let result = cxaDemangle(pointer, nil, nil, &status), status == 0 else { return nil }
                defer { free(result) }
                return String(cString: result)
            }
            return demangled ?? symbol
        }
        return symbol
    }
}

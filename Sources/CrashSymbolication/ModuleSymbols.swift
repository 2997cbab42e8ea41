// The symbols of one ELF file, read with libdw, looked up by file address (runtime address minus
// the record's load bias). Each file is reported to its own Dwfl at base 0, so one instance serves
// every record of that build-id whatever its ASLR bias.
//
// Three workarounds for libdw 0.188 on Swift binaries (DESIGN.md): there is no .debug_aranges, so
// CUs are found through a sorted table of their DW_AT_ranges; functions are nested in
// DW_TAG_module, which dwarf_getscopes does not enter, so subprograms and their inlined
// subroutines are found by walking the DIEs here; and symbol-table lookup in libdwfl is linear
// (about 1 ms a frame in libswiftCore), so a sorted table is built once.
import CLibdwLoader
import CrashReportModel
import Foundation

/// One source location of a frame: the function and where in it. Innermost inline frame first.
public struct SymbolLocation: Sendable, Equatable {
    public var symbol: String
    public var file: String?
    public var line: Int?
    public var column: Int?
    public var isInlined: Bool
}

final class ModuleSymbols {
    let path: String
    let hasDebugInfo: Bool

    private let dwfl: OpaquePointer
    private let module: OpaquePointer
    private let callbacks: UnsafeMutablePointer<Dwfl_Callbacks>
    private let debugPath: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private var dwarfBias: Dwarf_Addr = 0

    private struct Range {
        var low: UInt64
        var high: UInt64
        var die: Dwarf_Die
        var cu: Dwarf_Die
    }

    private var compilationUnits: [Range] = []
    private var subprogramsByUnit: [UInt64: [Range]] = [:]
    private var sortedSymbols: [(address: UInt64, size: UInt64, name: String)]?

    /// Opens `path` (a binary or a separate debug file). `debugSearchPath` lets libdwfl find the
    /// separate debug file of a stripped binary (by .gnu_debuglink or build-id).
    init?(path: String, debugSearchPath: [String]) {
        // No libdw on this host: nothing is symbolicated here (frames keep build-id and offset
        // for the collector or crashtool).
        guard ccr_libdw_load() == 1 else { return nil }
        self.path = path
        debugPath = .allocate(capacity: 1)
        // "-": don't insist on the debuglink CRC (build-ids are checked instead); "": the
        // binary's own folder; ".debug": its .debug subfolder; then the given folders.
        debugPath.initialize(to: strdup((["-", ".debug"] + debugSearchPath).joined(separator: ":")))
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: ccr_libdw_offline_callbacks(debugPath))
        guard let dwfl = ccr_dwfl_begin(callbacks) else {
            free(debugPath.pointee)
            debugPath.deallocate()
            callbacks.deallocate()
            return nil
        }
        self.dwfl = dwfl
        ccr_dwfl_report_begin(dwfl)
        let module = ccr_dwfl_report_elf(dwfl, fileName(of: path), path, -1, 0, true)
        ccr_dwfl_report_end(dwfl, nil, nil)
        guard let module else {
            ccr_dwfl_end(dwfl)
            free(debugPath.pointee)
            debugPath.deallocate()
            callbacks.deallocate()
            return nil
        }
        self.module = module
        var bias: Dwarf_Addr = 0
        hasDebugInfo = ccr_dwfl_module_getdwarf(module, &bias) != nil
        dwarfBias = bias
        if hasDebugInfo { indexCompilationUnits() }
    }

    deinit {
        ccr_dwfl_end(dwfl)
        free(debugPath.pointee)
        debugPath.deallocate()
        callbacks.deallocate()
    }

    /// Innermost first; empty when nothing covers the address.
    func lookup(fileAddress: UInt64) -> [SymbolLocation] {
        if hasDebugInfo, let fromDWARF = dwarfLookup(fileAddress), !fromDWARF.isEmpty {
            return fromDWARF
        }
        if let symbol = symbolLookup(fileAddress) {
            return [SymbolLocation(symbol: symbol, file: nil, line: nil, column: nil, isInlined: false)]
        }
        return []
    }

    // MARK: - DWARF

    private func indexCompilationUnits() {
        var cuBias: Dwarf_Addr = 0
        var previous: UnsafeMutablePointer<Dwarf_Die>?
        while let unit = ccr_dwfl_module_nextcu(module, previous, &cuBias) {
            previous = unit
            var die = unit.pointee
            for (low, high) in ranges(of: &die) {
                compilationUnits.append(Range(low: low, high: high, die: die, cu: die))
            }
        }
        compilationUnits.sort { $0.low < $1.low }
    }

    private func ranges(of die: inout Dwarf_Die) -> [(UInt64, UInt64)] {
        var result: [(UInt64, UInt64)] = []
        var base: Dwarf_Addr = 0, start: Dwarf_Addr = 0, end: Dwarf_Addr = 0
        var offset = ccr_dwarf_ranges(&die, 0, &base, &start, &end)
        while offset > 0 {
            if end > start { result.append((start, end)) }
            offset = ccr_dwarf_ranges(&die, offset, &base, &start, &end)
        }
        return result
    }

    /// The range in `table` (sorted by low) that contains `address`, preferring the narrowest.
    private func containing(_ address: UInt64, in table: [Range]) -> Range? {
        var low = 0, high = table.count
        while low < high {
            let middle = (low + high) / 2
            if table[middle].low <= address { low = middle + 1 } else { high = middle }
        }
        var best: Range?
        var index = low - 1
        var scanned = 0
        while index >= 0 && scanned < 256 {
            let candidate = table[index]
            if candidate.low <= address && address < candidate.high,
               best == nil || candidate.high - candidate.low < best!.high - best!.low {
                best = candidate
            }
            index -= 1
            scanned += 1
        }
        return best
    }

    private func subprograms(of unit: Range) -> [Range] {
        var cu = unit.cu
        let key = UInt64(ccr_dwarf_dieoffset(&cu))
        if let cached = subprogramsByUnit[key] { return cached }
        var found: [Range] = []
        collectSubprograms(under: &cu, cu: unit.cu, into: &found)
        found.sort { $0.low < $1.low }
        subprogramsByUnit[key] = found
        return found
    }

    private func collectSubprograms(under parent: inout Dwarf_Die, cu: Dwarf_Die, into found: inout [Range]) {
        var child = Dwarf_Die()
        guard ccr_dwarf_child(&parent, &child) == 0 else { return }
        while true {
            switch Int(ccr_dwarf_tag(&child)) {
            case DW_TAG_subprogram:
                for (low, high) in ranges(of: &child) {
                    found.append(Range(low: low, high: high, die: child, cu: cu))
                }
                collectSubprograms(under: &child, cu: cu, into: &found)   // local functions
            case DW_TAG_module, DW_TAG_namespace, DW_TAG_structure_type, DW_TAG_class_type,
                 DW_TAG_union_type, DW_TAG_enumeration_type, DW_TAG_lexical_block:
                collectSubprograms(under: &child, cu: cu, into: &found)
            default:
                break
            }
            var sibling = Dwarf_Die()
            guard ccr_dwarf_siblingof(&child, &sibling) == 0 else { return }
            child = sibling
        }
    }

    private func dwarfLookup(_ fileAddress: UInt64) -> [SymbolLocation]? {
        let address = fileAddress &- dwarfBias
        guard let unit = containing(address, in: compilationUnits),
              let function = containing(address, in: subprograms(of: unit)) else { return nil }
        var cu = unit.cu

        // The chain of inlined subroutines at the address, outermost first.
        var chain: [Dwarf_Die] = [function.die]
        var current = function.die
        descend: while true {
            var child = Dwarf_Die()
            guard ccr_dwarf_child(&current, &child) == 0 else { break }
            while true {
                let tag = Int(ccr_dwarf_tag(&child))
                if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) && ccr_dwarf_haspc(&child, address) == 1 {
                    if tag == DW_TAG_inlined_subroutine { chain.append(child) }
                    current = child
                    continue descend
                }
                var sibling = Dwarf_Die()
                guard ccr_dwarf_siblingof(&child, &sibling) == 0 else { break descend }
                child = sibling
            }
        }

        // Innermost location from the line table; each outer frame's location is the call site
        // recorded on the frame inlined into it.
        var file: String?, line: Int?, column: Int?
        if let entry = ccr_dwarf_getsrc_die(&cu, address) {
            if let name = ccr_dwarf_linesrc(entry, nil, nil) { file = absolute(String(cString: name), cu: &cu) }
            var number: Int32 = 0, col: Int32 = 0
            if ccr_dwarf_lineno(entry, &number) == 0 { line = Int(number) }
            if ccr_dwarf_linecol(entry, &col) == 0, col > 0 { column = Int(col) }
        }
        var locations: [SymbolLocation] = []
        for index in stride(from: chain.count - 1, through: 0, by: -1) {
            var die = chain[index]
            locations.append(SymbolLocation(symbol: name(of: &die) ?? "??", file: file, line: line, column: column,
                                            isInlined: index > 0))
            if index > 0 {
                (file, line, column) = callSite(of: &die, cu: &cu)
            }
        }
        return locations
    }

    /// A file name relative to the CU's compilation directory, joined with it (as llvm-symbolizer
    /// and debuggers show it) and normalised: glibc's relative directory and file name both start
    /// at its source root, so "./nptl" + "./nptl/pthread_create.c" is "nptl/pthread_create.c".
    private func absolute(_ file: String, cu: inout Dwarf_Die) -> String {
        guard !file.hasPrefix("/") else { return SourcePath.normalised(file) }
        var attribute = Dwarf_Attribute()
        guard ccr_dwarf_attr(&cu, UInt32(DW_AT_comp_dir), &attribute) != nil, let directory = ccr_dwarf_formstring(&attribute) else {
            return SourcePath.normalised(file)
        }
        return SourcePath.joined(directory: String(cString: directory), file: file)
    }

    private func name(of die: inout Dwarf_Die) -> String? {
        var attribute = Dwarf_Attribute()
        for name in [DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name] {
            if ccr_dwarf_attr_integrate(&die, UInt32(name), &attribute) != nil, let text = ccr_dwarf_formstring(&attribute) {
                return String(cString: text)
            }
        }
        return nil
    }

    private func callSite(of die: inout Dwarf_Die, cu: inout Dwarf_Die) -> (String?, Int?, Int?) {
        func unsigned(_ name: Int) -> UInt64? {
            var attribute = Dwarf_Attribute()
            var value: Dwarf_Word = 0
            guard ccr_dwarf_attr(&die, UInt32(name), &attribute) != nil, ccr_dwarf_formudata(&attribute, &value) == 0 else { return nil }
            return value
        }
        var file: String?
        if let index = unsigned(DW_AT_call_file) {
            var files: OpaquePointer?
            var count = 0
            if ccr_dwarf_getsrcfiles(&cu, &files, &count) == 0, Int(index) < count, let name = ccr_dwarf_filesrc(files, Int(index), nil, nil) {
                file = absolute(String(cString: name), cu: &cu)
            }
        }
        let line = unsigned(DW_AT_call_line).map(Int.init)
        let column = unsigned(DW_AT_call_column).map(Int.init).flatMap { $0 > 0 ? $0 : nil }
        return (file, line, column)
    }

    // MARK: - Symbol table

    private func symbolLookup(_ address: UInt64) -> String? {
        if sortedSymbols == nil { sortedSymbols = readSymbols() }
        guard let symbols = sortedSymbols, !symbols.isEmpty else { return nil }
        var low = 0, high = symbols.count
        while low < high {
            let middle = (low + high) / 2
            if symbols[middle].address <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let symbol = symbols[low - 1]
        if symbol.size > 0 && address >= symbol.address + symbol.size { return nil }
        return symbol.name
    }

    private func readSymbols() -> [(address: UInt64, size: UInt64, name: String)] {
        let count = ccr_dwfl_module_getsymtab(module)
        guard count > 0 else { return [] }
        var symbols: [(address: UInt64, size: UInt64, name: String)] = []
        symbols.reserveCapacity(Int(count))
        for index in 1..<count {
            var symbol = GElf_Sym()
            var address: GElf_Addr = 0
            var section: GElf_Word = 0
            guard let name = ccr_dwfl_module_getsym_info(module, index, &symbol, &address, &section, nil, nil) else { continue }
            let type = symbol.st_info & 0xF
            guard type == UInt8(STT_FUNC) || type == UInt8(STT_GNU_IFUNC), symbol.st_shndx != UInt16(SHN_UNDEF), address != 0 else { continue }
            symbols.append((address, symbol.st_size, String(cString: name)))
        }
        symbols.sort { $0.address < $1.address }
        return symbols
    }
}

// The AArch64 call test the stack scan of a thread that blocks the asking signal uses on arm64
// Linux: a stack word is kept as a return address only when the instruction before it is a call.
// Encodings from the Arm Architecture Reference Manual (A64), checked here on any host.
import CCrashCapture
import Testing

@Suite("AArch64 call instructions")
struct AArch64CallInstructionTests {
    @Test("calls: BL (both directions), BLR, and the pointer-authenticating BLRAA, BLRAAZ, BLRAB, BLRABZ",
          arguments: [
              ("bl #0", 0x9400_0000), ("bl #-4", 0x97FF_FFFF), ("bl #0x7fffffc", 0x95FF_FFFF),
              ("blr x8", 0xD63F_0100), ("blr x30", 0xD63F_03C0), ("blr x0", 0xD63F_0000),
              ("blraaz x8", 0xD63F_091F), ("blrabz x1", 0xD63F_0C3F),
              ("blraa x8, x9", 0xD73F_0909), ("blrab x8, sp", 0xD73F_0D1F),
          ] as [(String, UInt32)])
    func calls(_ name: String, _ instruction: UInt32) {
        #expect(ccr_aarch64_instruction_is_call(instruction) == 1, "\(name)")
    }

    @Test("not calls: branches without link, returns, and ordinary instructions",
          arguments: [
              ("b #0", 0x1400_0000), ("b.eq #8", 0x5400_0040), ("br x8", 0xD61F_0100), ("ret", 0xD65F_03C0),
              ("braaz x8", 0xD61F_091F), ("braa x8, x9", 0xD71F_0909), ("retaa", 0xD65F_0BFF),
              ("nop", 0xD503_201F), ("add x0, x0, #1", 0x9100_0400), ("stp x29, x30, [sp, #-16]!", 0xA9BF_7BFD),
              ("blr with a nonzero Rm field (unallocated)", 0xD63F_0101), ("0", 0), ("all ones", 0xFFFF_FFFF),
          ] as [(String, UInt32)])
    func notCalls(_ name: String, _ instruction: UInt32) {
        #expect(ccr_aarch64_instruction_is_call(instruction) == 0, "\(name)")
    }
}

// crash-sender: delivery at crash time (CrashReporter.Configuration.deliveryAtCrash). The crash
// handler of an app that linked CrashReporting runs it once the crash record is durable:
//   crash-sender --config <reports>/crash-sender.json --record <reports>/pending/<id>.crash
// and waits for it, bounded. It attaches the session's context, symbolicates, builds seed 000's
// payload, redacts, checks and uploads the record once per destination; what it cannot send stays
// in pending/ for the app's next launch. Exit status: 0 delivered, 1 kept, 2 bad arguments.
import CrashReporting
import Glibc

func complain(_ text: String) {
    var line = "crash-sender: " + text + "\n"
    _ = line.withUTF8 { write(2, $0.baseAddress, $0.count) }
}

// Started from a crash handler, with its mask (almost every signal blocked) kept through execve:
// SIGTERM and the like work again from here on.
var unblocked = sigset_t()
sigemptyset(&unblocked)
pthread_sigmask(SIG_SETMASK, &unblocked, nil)

var configuration: String?
var record: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--config": configuration = arguments.next()
    case "--record": record = arguments.next()
    default:
        complain("unknown argument \(argument); usage: crash-sender --config <file> --record <pending record>")
        exit(2)
    }
}
guard let configuration, let record else {
    complain("usage: crash-sender --config <reports>/crash-sender.json --record <reports>/pending/<id>.crash")
    exit(2)
}
exit(CrashReporter._deliverAtCrash(configurationFile: configuration, record: record))

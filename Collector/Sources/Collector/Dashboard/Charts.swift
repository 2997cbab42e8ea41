// The dashboard's charts as inline SVG, drawn on the server (no script, no stylesheet to fetch):
// crash-free sessions or users per day for the versions with the most sessions, with seed 001's
// target line, and the issues' 14-day sparklines. Each carries a <title> and <desc> for screen
// readers; the crash-free table under the charts holds the same numbers.
import Foundation

struct CrashFreeChart {
    enum Metric {
        case sessions, users

        /// Seed 001: crash-free sessions > 99.9 %, crash-free users > 99.5 %.
        var target: Double { self == .sessions ? 0.999 : 0.995 }
        var name: String { self == .sessions ? "sessions" : "users" }

        func rate(_ row: CrashFreeRow) -> Double {
            let json = CrashFreeJSON(row)
            return self == .sessions ? json.crash_free_sessions : json.crash_free_users
        }

        func counts(_ row: CrashFreeRow) -> (crashed: Int, total: Int) {
            self == .sessions ? (row.crashedSessions, row.sessions) : (row.crashedUsers, row.users)
        }
    }

    /// How many versions are drawn: the ones with the most sessions over the chart's days.
    static let versionCount = 3
    static let colors = ["#4f7cff", "#e8710a", "#188038"]

    let rows: [CrashFreeRow]
    /// yyyy-MM-dd, oldest first: the x axis.
    let days: [String]
    let metric: Metric

    struct Series {
        var label: String
        var points: [String: CrashFreeRow]
    }

    var series: [Series] {
        var byVersion: [String: Series] = [:]
        var totals: [String: Int] = [:]
        let shown = Set(days)
        for row in rows where shown.contains(row.day) {
            let label = "\(row.appVersion) (\(row.bundleID))"
            byVersion[label, default: Series(label: label, points: [:])].points[row.day] = row
            totals[label, default: 0] += row.sessions
        }
        return totals.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .prefix(Self.versionCount).compactMap { byVersion[$0.key] }
    }

    // Geometry: the plot, then the legend to its right.
    static let width = 550.0, height = 230.0
    static let left = 58.0, top = 16.0, plotWidth = 290.0, plotHeight = 170.0

    func svg() -> String {
        let series = series
        let id = "crash-free-\(metric.name)"
        let rates = series.flatMap { $0.points.values.map(metric.rate) }
        // The y axis runs from 100 % down to the lowest rate shown, in 5 % steps, never less than
        // 99 % so that the target lines stay apart from the top.
        let low = min(0.99, ((rates.min() ?? 1) * 20).rounded(.down) / 20)
        func y(_ rate: Double) -> Double { Self.top + (1 - rate) / (1 - low) * Self.plotHeight }
        func x(_ index: Int) -> Double {
            Self.left + (days.count <= 1 ? Self.plotWidth / 2 : Double(index) / Double(days.count - 1) * Self.plotWidth)
        }
        let title = "Crash-free \(metric.name) per day, top versions, last \(days.count) days"
        var description = "Target: more than \(percent(metric.target)) crash-free \(metric.name) (seed 001)."
        for entry in series {
            let ordered = days.compactMap { entry.points[$0] }
            guard let last = ordered.last else { continue }
            let lowest = ordered.min { metric.rate($0) < metric.rate($1) }!
            description += " \(entry.label): \(percent(metric.rate(last))) on \(last.day), lowest \(percent(metric.rate(lowest))) on \(lowest.day)."
        }
        var svg = """
            <figure><svg class="chart" id="\(id)" xmlns="http://www.w3.org/2000/svg" role="img" width="\(Int(Self.width))"
            height="\(Int(Self.height))" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" aria-labelledby="\(id)-title \(id)-desc"
            font-family="system-ui,sans-serif" font-size="11">
            <title id="\(id)-title">\(h(title))</title><desc id="\(id)-desc">\(h(description))</desc>
            <rect x="\(Self.left)" y="\(Self.top)" width="\(Self.plotWidth)" height="\(Self.plotHeight)" fill="#fff" stroke="#e3e6eb"/>
            """
        // Y ticks: the bottom, the middle, 100 %.
        for rate in [low, (low + 1) / 2, 1.0] {
            svg += "<line x1=\"\(Self.left - 4)\" x2=\"\(Self.left)\" y1=\"\(fmt(y(rate)))\" y2=\"\(fmt(y(rate)))\" stroke=\"#6b7280\"/>"
                + "<text x=\"\(Self.left - 6)\" y=\"\(fmt(y(rate) + 4))\" text-anchor=\"end\" fill=\"#374151\">\(percent(rate))</text>"
        }
        // X labels: first, middle and last day (MM-dd).
        for index in Set([0, days.count / 2, days.count - 1]).sorted() where days.indices.contains(index) {
            svg += "<text x=\"\(fmt(x(index)))\" y=\"\(fmt(Self.top + Self.plotHeight + 16))\" text-anchor=\"middle\" fill=\"#374151\">"
                + "\(h(String(days[index].dropFirst(5))))</text>"
        }
        // The target line, dashed, labelled at its right end.
        let targetY = fmt(y(metric.target))
        svg += """
            <g class="target"><line x1="\(Self.left)" x2="\(Self.left + Self.plotWidth)" y1="\(targetY)" y2="\(targetY)"
            stroke="#b3261e" stroke-dasharray="5 3"/><text x="\(Self.left + Self.plotWidth + 6)" y="\(fmt(y(metric.target) + 4))"
            fill="#b3261e">target &gt; \(percent(metric.target))</text></g>
            """
        for (index, entry) in series.enumerated() {
            let color = Self.colors[index % Self.colors.count]
            // A line through consecutive days only: a day without sessions is a gap, not a slope.
            var segment: [String] = []
            var lines: [[String]] = []
            for (dayIndex, day) in days.enumerated() {
                if let row = entry.points[day] {
                    segment.append("\(fmt(x(dayIndex))),\(fmt(y(metric.rate(row))))")
                } else if !segment.isEmpty {
                    lines.append(segment)
                    segment = []
                }
            }
            if !segment.isEmpty { lines.append(segment) }
            svg += "<g class=\"series\" data-version=\"\(h(entry.label))\">"
            for line in lines where line.count > 1 {
                svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(line.joined(separator: " "))\"/>"
            }
            for (dayIndex, day) in days.enumerated() {
                guard let row = entry.points[day] else { continue }
                let (crashed, total) = metric.counts(row)
                svg += "<circle cx=\"\(fmt(x(dayIndex)))\" cy=\"\(fmt(y(metric.rate(row))))\" r=\"3\" fill=\"\(color)\">"
                    + "<title>\(h("\(entry.label), \(day): \(percent(metric.rate(row))) crash-free \(metric.name) (\(total - crashed) of \(total))"))</title></circle>"
            }
            // The legend.
            let legendY = Self.top + 60 + Double(index) * 18   // below the target label
            let label = entry.label.count > 31 ? String(entry.label.prefix(30)) + "…" : entry.label
            svg += "<line x1=\"\(Self.left + Self.plotWidth + 6)\" x2=\"\(Self.left + Self.plotWidth + 22)\" y1=\"\(fmt(legendY))\""
                + " y2=\"\(fmt(legendY))\" stroke=\"\(color)\" stroke-width=\"2\"/>"
                + "<text x=\"\(Self.left + Self.plotWidth + 26)\" y=\"\(fmt(legendY + 4))\" fill=\"#1d2330\">\(h(label))</text>"
            svg += "</g>"
        }
        svg += "</svg><figcaption>\(h(title)); the dashed line is seed 001's target. The table below has the numbers.</figcaption></figure>"
        return svg
    }
}

/// An issue's events per day as small bars, the newest on the right; a day without events is a
/// thin grey baseline.
func sparkline(_ trend: [TrendDay], width: Int = 112, height: Int = 24) -> String {
    let peak = max(1, trend.map(\.events).max() ?? 0)
    let slot = Double(width) / Double(max(1, trend.count))
    let total = trend.map(\.events).reduce(0, +)
    let title = "Events per day, \(trend.first?.day ?? "") to \(trend.last?.day ?? ""): "
        + trend.map { String($0.events) }.joined(separator: ", ") + " (\(total) in all)"
    var svg = "<svg class=\"spark\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"\(width)\" height=\"\(height)\""
        + " viewBox=\"0 0 \(width) \(height)\"><title>\(h(title))</title>"
    for (index, day) in trend.enumerated() {
        let barHeight = day.events == 0 ? 1 : max(2, Double(day.events) / Double(peak) * Double(height - 1))
        svg += "<rect x=\"\(fmt(Double(index) * slot + 1))\" y=\"\(fmt(Double(height) - barHeight))\" width=\"\(fmt(max(1, slot - 2)))\""
            + " height=\"\(fmt(barHeight))\" fill=\"\(day.events == 0 ? "#d1d5db" : "#b3261e")\" data-day=\"\(day.day)\""
            + " data-events=\"\(day.events)\"/>"
    }
    return svg + "</svg>"
}

/// A coordinate with one decimal at most.
private func fmt(_ value: Double) -> String {
    let rounded = (value * 10).rounded() / 10
    return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
}

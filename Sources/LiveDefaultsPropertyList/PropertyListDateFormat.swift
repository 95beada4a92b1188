import Foundation

/// The text form of dates in old-style property lists and in `defaults` output: `2024-01-01 12:00:00 +0000`.
///
/// Written always in UTC with whole seconds, as macOS prints `NSDate`. Read in that form with any `±hhmm`
/// offset, in ISO 8601 (`2024-01-01T12:00:00Z`, `…+02:00`), or as a bare day (`2024-01-01`, midnight UTC).
/// Impossible dates (February 30th, hour 24, month 13) are rejected rather than rolled over.
package enum PropertyListDateFormat {
    /// Formats `date` as `yyyy-MM-dd HH:mm:ss +0000`, rounding down to the second.
    package static func string(from date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (days, secondOfDay) = seconds.quotientAndRemainderFlooring(dividingBy: 86_400)
        let (year, month, day) = CalendarArithmetic.civilFromDays(days)
        let hour = secondOfDay / 3600
        let minute = secondOfDay % 3600 / 60
        let second = secondOfDay % 60
        let yearText = year < 0 ? "-" + pad(-year, 4) : pad(year, 4)
        return "\(yearText)-\(pad(month, 2))-\(pad(day, 2)) \(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)) +0000"
    }

    /// Parses a date in one of the accepted forms; `nil` when the text is not one of them or names no real moment.
    package static func date(from text: String) -> Date? {
        var reader = Reader(Array(text.trimmingCharacters(in: .whitespaces).utf8))
        guard let year = reader.number(digits: 4), reader.take("-"),
            let month = reader.number(digits: 2), reader.take("-"),
            let day = reader.number(digits: 2)
        else { return nil }
        var hour: Int64 = 0
        var minute: Int64 = 0
        var second: Int64 = 0
        var offsetSeconds: Int64 = 0
        if !reader.atEnd {
            guard reader.take(" ") || reader.take("T") || reader.take("t") else { return nil }
            guard let h = reader.number(digits: 2), reader.take(":"), let m = reader.number(digits: 2) else {
                return nil
            }
            hour = h
            minute = m
            if reader.take(":") {
                guard let s = reader.number(digits: 2) else { return nil }
                second = s
            }
            _ = reader.take(" ")
            if reader.take("Z") || reader.take("z") {
                offsetSeconds = 0
            } else if let sign = reader.sign() {
                guard let offsetHours = reader.number(digits: 2) else { return nil }
                _ = reader.take(":")
                guard let offsetMinutes = reader.number(digits: 2), offsetHours < 24, offsetMinutes < 60 else {
                    return nil
                }
                offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            } else if !reader.atEnd {
                return nil
            }
            guard reader.atEnd else { return nil }
        }
        guard
            CalendarArithmetic.namesAMoment(
                year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        let seconds = CalendarArithmetic.secondsSince1970(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return Date(timeIntervalSince1970: TimeInterval(seconds - offsetSeconds))
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var atEnd: Bool { index == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        mutating func sign() -> Int64? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }

        mutating func number(digits: Int) -> Int64? {
            guard index + digits <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + digits] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            index += digits
            return value
        }
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}

extension Int64 {
    fileprivate func quotientAndRemainderFlooring(dividingBy divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}

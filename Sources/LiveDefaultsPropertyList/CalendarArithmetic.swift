import Foundation

/// Proleptic Gregorian calendar arithmetic in UTC (Howard Hinnant's `days_from_civil` and
/// `civil_from_days`), for the dates of the XML and old-style formats.
package enum CalendarArithmetic {
    package static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    package static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Whether the fields name a moment that exists: a month of the year, a day of that month, an
    /// hour of the day, a minute and a second (no leap second). The one rule for dates read from
    /// text a person typed (``PropertyListDateFormat``); a file's `<date>` is read as Foundation
    /// reads it, rolled over (``secondsSince1970(year:month:day:hour:minute:second:)``).
    package static func namesAMoment(
        year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64
    ) -> Bool {
        (1...12).contains(month) && (1...daysInMonth(month, year: year)).contains(day) && (0...23).contains(hour)
            && (0...59).contains(minute) && (0...59).contains(second)
    }

    /// The seconds from 1970 to the fields' moment in UTC, with fields past their range rolled over
    /// as Foundation's `PropertyListSerialization` reads an XML `<date>`: days, hours, minutes and
    /// seconds count on from the start of the month (February 31st is March 2nd or 3rd, a 60th
    /// second is the next minute's first); month 13 is January of the next year, and month 0 or
    /// past 13 adds nothing to the year's start.
    package static func secondsSince1970(
        year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64
    ) -> Int64 {
        let yearStart = daysFromCivil(year: year, month: 1, day: 1)
        let monthStart: Int64 =
            switch month {
            case 1...12: daysFromCivil(year: year, month: month, day: 1)
            case 13: daysFromCivil(year: year + 1, month: 1, day: 1)
            default: yearStart
            }
        return (monthStart + day - 1) * 86_400 + hour * 3600 + minute * 60 + second
    }

    static func isLeapYear(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(_ month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

package data

import "time"

// Java's date classes (java.util.Date's toString, GregorianCalendar,
// SimpleDateFormat) reckon in a hybrid calendar: the Julian calendar before
// the Gregorian cutover (1582-10-15T00:00:00Z, which follows Julian
// 1582-10-04), the Gregorian one from it on. Go's time package is
// proleptic Gregorian throughout, so every date Kafka Connect prints or
// parses goes through the two functions below; nothing else in Sluice
// should turn an instant into a calendar date or back.
//
// Years are astronomical: 0 is 1 BC, -1 is 2 BC (Java's era year is
// 1 - year before year 1).

const (
	// cutoverDay is the day of the cutover counted from 1970-01-01.
	cutoverDay = -141427
	// cutoverYear is the year whose fields Java reckons either way.
	cutoverYear = 1582
	// julianMarch0 is the Julian day number of Julian 0000-03-01.
	julianMarch0 = 1721118
	// unixJDN is the Julian day number of 1970-01-01.
	unixJDN = 2440588
)

// gregorianCutover is the first instant Java reckons in the Gregorian
// calendar.
var gregorianCutover = time.UnixMilli(cutoverDay * msPerDay)

// JavaCalendarDate is the date of t (in UTC) in Java's calendar: Julian
// before 1582-10-15, so the proleptic Gregorian 0001-01-01 is 0001-01-03
// and 1582-10-14 is 1582-10-04. Times of day are the same in both
// calendars (they share midnight), so t's clock needs no conversion.
func JavaCalendarDate(t time.Time) (year int, month time.Month, day int) {
	u := t.UTC()
	if !u.Before(gregorianCutover) {
		return u.Date()
	}
	return julianFromDay(floorDiv(u.Unix(), 86400))
}

// JavaCalendarTime is the instant a lenient GregorianCalendar in UTC gives
// these fields, as SimpleDateFormat.parse computes it. Fields out of range
// roll over: month 13 is January of the next year, day 0 the last of the
// previous month, hour 24 the next day, and so on. The calendar is chosen
// after the time of day's whole days are added to the date: Julian when
// year (as given, before month rolls it) is before 1582; otherwise
// Gregorian if that reading falls on or after the cutover, else Julian.
// So the ten days that do not exist (1582-10-05 to 14) read as Julian dates
// and land ten days later (1582-10-10 is 1582-10-20).
func JavaCalendarTime(year int, month time.Month, day, hour, minute, sec, msec int) time.Time {
	y, m := int64(year), int64(month)-1
	y += floorDiv(m, 12)
	m = m - 12*floorDiv(m, 12) + 1
	tod := int64(hour)*3600000 + int64(minute)*60000 + int64(sec)*1000 + int64(msec)
	offset := floorDiv(tod, msPerDay)
	days := julianDay(y, m, int64(day)) + offset
	if year >= cutoverYear {
		if g := gregorianDay(y, m, int64(day)) + offset; g >= cutoverDay {
			days = g
		}
	}
	return time.UnixMilli(days*msPerDay + tod - offset*msPerDay).UTC()
}

// JavaCalendarOrdinalTime is JavaCalendarTime for a day of the year (1 is
// January 1st) instead of a month and day, as SimpleDateFormat reads the
// pattern letter D. Days of 1582 count from Julian January 1st and run on
// across the cutover (day 278 is October 15th), as Java counts them.
func JavaCalendarOrdinalTime(year, yearDay, hour, minute, sec, msec int) time.Time {
	if year != cutoverYear {
		return JavaCalendarTime(year, time.January, yearDay, hour, minute, sec, msec)
	}
	start := julianDay(cutoverYear, 1, 1)
	ms := (start+int64(yearDay)-1)*msPerDay + int64(hour)*3600000 + int64(minute)*60000 + int64(sec)*1000 + int64(msec)
	return time.UnixMilli(ms).UTC()
}

// julianDay is the day (from 1970-01-01) of a Julian calendar date, month
// in 1..12, day any number (counted on from the month's first).
func julianDay(y, m, d int64) int64 {
	// Years counted from March, so that February's leap day ends a year.
	if m < 3 {
		y--
		m += 12
	}
	return julianMarch0 - unixJDN + 365*y + floorDiv(y, 4) + (153*(m-3)+2)/5 + d - 1
}

// gregorianDay is julianDay for a proleptic Gregorian date.
func gregorianDay(y, m, d int64) int64 {
	if m < 3 {
		y--
		m += 12
	}
	// Julian dates run ahead of Gregorian ones in year 0: Gregorian
	// 0000-03-01 is two days after Julian 0000-03-01.
	return julianMarch0 + 2 - unixJDN + 365*y + floorDiv(y, 4) - floorDiv(y, 100) + floorDiv(y, 400) + (153*(m-3)+2)/5 + d - 1
}

// julianFromDay is the Julian calendar date of a day counted from
// 1970-01-01.
func julianFromDay(days int64) (int, time.Month, int) {
	z := days + unixJDN - julianMarch0 // days since Julian 0000-03-01
	y := floorDiv(4*z+3, 1461)
	doy := z - 365*y - floorDiv(y, 4) // 0 is March 1
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
		y++
	}
	return int(y), time.Month(m), int(d)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// JavaCalendarYearDay is the day of the year of t (in UTC) in Java's
// calendar, 1 for January 1st; 1582 counts the days that were kept, so it
// has 355 and October 15th is its 278th.
func JavaCalendarYearDay(t time.Time) int {
	year, _, _ := JavaCalendarDate(t)
	start := JavaCalendarTime(year, time.January, 1, 0, 0, 0, 0)
	return int(floorDiv(t.Unix()-start.Unix(), 86400)) + 1
}

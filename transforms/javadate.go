package transforms

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// dateFormat is the part of java.text.SimpleDateFormat that TimestampConverter
// and TimestampRouter use, always in UTC and with English names. Dates are
// in Java's calendar, Julian before 1582-10-15 (pluginsdk/data's
// JavaCalendarDate and JavaCalendarTime), as SimpleDateFormat's
// GregorianCalendar has them, so an instant prints and reads back as Java
// does.
//
// Pattern letters: G y Y M L w W D d F E u a H k K h m s S z Z X, and quoted
// text ('...', ” for a quote). Other ASCII letters are refused with Java's
// "Illegal pattern character" message. Differences from Java: parsing
// reads Y (week year) as the calendar year and ignores the week fields
// (w W F E u); parsing understands zone offsets (Z, +hh, +hhmm,
// +hh:mm, GMT+hh:mm, UTC, GMT) but not zone names.
type dateFormat struct {
	pattern string
	items   []dfItem
	// weeks is whether a letter needs the day of the year or month
	// counted in days passed (D w W F Y).
	weeks bool
}

type dfItem struct {
	letter byte // 0 for literal text
	count  int
	text   string
}

const dfLetters = "GyYMLwWDdFEuaHkKhmsSzZX"

func compileDateFormat(p string) (*dateFormat, error) {
	f := &dateFormat{pattern: p}
	lit := func(s string) {
		if n := len(f.items); n > 0 && f.items[n-1].letter == 0 {
			f.items[n-1].text += s
			return
		}
		f.items = append(f.items, dfItem{text: s})
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			if i+1 < len(p) && p[i+1] == '\'' {
				lit("'")
				i += 2
				continue
			}
			end := i + 1
			var sb strings.Builder
			for {
				if end >= len(p) {
					return nil, errors.New("Unterminated quote")
				}
				if p[end] == '\'' {
					if end+1 < len(p) && p[end+1] == '\'' {
						sb.WriteByte('\'')
						end += 2
						continue
					}
					break
				}
				sb.WriteByte(p[end])
				end++
			}
			lit(sb.String())
			i = end + 1
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if !strings.ContainsRune(dfLetters, rune(c)) {
				return nil, errors.New("Illegal pattern character '" + string(c) + "'")
			}
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			f.items = append(f.items, dfItem{letter: c, count: j - i})
			f.weeks = f.weeks || strings.IndexByte("DwWFY", c) >= 0
			i = j
		default:
			lit(string(c))
			i++
		}
	}
	return f, nil
}

// writePad writes n (not negative) with zeros before it up to width
// digits.
func writePad(b *strings.Builder, n, width int) {
	var tmp [24]byte
	d := strconv.AppendInt(tmp[:0], int64(n), 10)
	for i := len(d); i < width; i++ {
		b.WriteByte('0')
	}
	b.Write(d)
}

// usWeek is the week of the year in the US convention Java's default
// locale uses: weeks start on Sunday and week 1 holds January 1st. Days are
// counted as they passed (1582 lost ten), as Java counts them.
func usWeek(t time.Time, year, yday int) int {
	// The Saturday ending t's week decides its year.
	if y, _, _ := data.JavaCalendarDate(t.AddDate(0, 0, 6-int(t.Weekday()))); y != year {
		return 1
	}
	jan1 := data.JavaCalendarTime(year, time.January, 1, 0, 0, 0, 0)
	return (yday-1+int(jan1.Weekday()))/7 + 1
}

// javaWeekYear is the week year GregorianCalendar.getWeekYear gives a day
// of year (astronomical) in the US week convention: the days of late
// December in the week of January 1st belong to the next year. Before year
// 1 Java looks at the wrong next year (astronomical -year, having set the
// BC era's year field to year+1), and so does this, to print what it
// prints.
func javaWeekYear(year int, month time.Month, yday int) int {
	if month != time.December {
		return year
	}
	start := data.JavaCalendarTime(year, time.January, 1, 0, 0, 0, 0)
	end := data.JavaCalendarTime(year+1, time.January, 1, 0, 0, 0, 0)
	length := int((end.Unix() - start.Unix()) / 86400)
	next := year + 1
	if year <= 0 {
		next = -year
		end = data.JavaCalendarTime(next, time.January, 1, 0, 0, 0, 0)
	}
	// Days from that January 1st to the first Sunday on or after it, a
	// Sunday counting as 7.
	toSunday := (7 - int(end.Weekday())) % 7
	if toSunday == 0 {
		toSunday = 7
	}
	if length-yday+1 <= 7-toSunday {
		return year + 1
	}
	return year
}

// Format prints t (in UTC) with the pattern, with dates in Java's calendar
// (Julian before 1582-10-15).
func (f *dateFormat) Format(t time.Time) string {
	t = t.UTC()
	year, month, day := data.JavaCalendarDate(t)
	var yday, mday int
	var first time.Time
	if f.weeks {
		yday = data.JavaCalendarYearDay(t)
		// The day of the month as days passed since its first: October
		// 1582 runs 1, 2, 3, 4, 15 and Java counts weeks in it by days
		// passed.
		first = data.JavaCalendarTime(year, month, 1, 0, 0, 0, 0)
		mday = int((t.Unix()-first.Unix())/86400) + 1
	}
	var b strings.Builder
	b.Grow(len(f.pattern) + 8)
	for _, it := range f.items {
		n := it.count
		switch it.letter {
		case 0:
			b.WriteString(it.text)
		case 'G':
			if year > 0 {
				b.WriteString("AD")
			} else {
				b.WriteString("BC")
			}
		case 'Y':
			// Java prints the week year astronomically (-1 is 2 BC), the
			// sign before the padding.
			wy := javaWeekYear(year, month, yday)
			if wy < 0 {
				b.WriteByte('-')
				wy = -wy
			}
			if n == 2 {
				writePad(&b, wy%100, 2)
			} else {
				writePad(&b, wy, n)
			}
		case 'y':
			y := year
			if y <= 0 {
				y = 1 - y
			}
			if n == 2 {
				writePad(&b, y%100, 2)
			} else {
				writePad(&b, y, n)
			}
		case 'M', 'L':
			switch {
			case n >= 4:
				b.WriteString(month.String())
			case n == 3:
				b.WriteString(month.String()[:3])
			default:
				writePad(&b, int(month), n)
			}
		case 'w':
			writePad(&b, usWeek(t, year, yday), n)
		case 'W':
			writePad(&b, (mday-1+int(first.Weekday()))/7+1, n)
		case 'D':
			writePad(&b, yday, n)
		case 'd':
			writePad(&b, day, n)
		case 'F':
			writePad(&b, (mday-1)/7+1, n)
		case 'E':
			if n >= 4 {
				b.WriteString(t.Weekday().String())
			} else {
				b.WriteString(t.Weekday().String()[:3])
			}
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			writePad(&b, wd, n)
		case 'a':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'H':
			writePad(&b, t.Hour(), n)
		case 'k':
			h := t.Hour()
			if h == 0 {
				h = 24
			}
			writePad(&b, h, n)
		case 'K':
			writePad(&b, t.Hour()%12, n)
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			writePad(&b, h, n)
		case 'm':
			writePad(&b, t.Minute(), n)
		case 's':
			writePad(&b, t.Second(), n)
		case 'S':
			writePad(&b, t.Nanosecond()/1e6, n)
		case 'z':
			if n >= 4 {
				b.WriteString("Coordinated Universal Time")
			} else {
				b.WriteString("UTC")
			}
		case 'Z':
			b.WriteString("+0000")
		case 'X':
			b.WriteString("Z")
		}
	}
	return b.String()
}

func isNumericLetter(c byte, count int) bool {
	switch c {
	case 'y', 'Y', 'w', 'W', 'D', 'd', 'F', 'u', 'H', 'k', 'K', 'h', 'm', 's', 'S':
		return true
	case 'M', 'L':
		return count < 3
	}
	return false
}

var errDateParse = errors.New("unparseable date")

// Parse reads a time the way SimpleDateFormat.parse(String) does: fields
// missing from the pattern default to 1970-01-01T00:00:00.000 UTC, values
// out of range roll over (the lenient default), dates before 1582-10-15
// are Julian (data.JavaCalendarTime), the era BC counts years back from
// 1 BC, and text after the last field is ignored.
func (f *dateFormat) Parse(s string) (time.Time, error) {
	year, month, day, hour, minute, sec, ms := 1970, 1, 1, 0, 0, 0, 0
	yday := 0
	pm, hasAmPm, hour12, bc := false, false, false, false
	offset := 0
	pos := 0
	for idx, it := range f.items {
		if it.letter == 0 {
			if !strings.HasPrefix(s[pos:], it.text) {
				return time.Time{}, errDateParse
			}
			pos += len(it.text)
			continue
		}
		// SimpleDateFormat skips spaces and tabs before every field.
		fieldStart := pos
		for pos < len(s) && (s[pos] == ' ' || s[pos] == '\t') {
			pos++
		}
		if isNumericLetter(it.letter, it.count) {
			// A field followed directly by another number is read with
			// its pattern width, as Java reads abutting fields (the width
			// counts from before the skipped spaces, as Java's does).
			limit := len(s)
			if idx+1 < len(f.items) && isNumericLetter(f.items[idx+1].letter, f.items[idx+1].count) {
				limit = min(len(s), fieldStart+it.count)
			}
			start := pos
			for pos < limit && s[pos] >= '0' && s[pos] <= '9' {
				pos++
			}
			if pos == start {
				return time.Time{}, errDateParse
			}
			n, err := strconv.Atoi(s[start:pos])
			if err != nil {
				return time.Time{}, errDateParse
			}
			switch it.letter {
			case 'y', 'Y':
				year = n
				if it.count <= 2 && pos-start == 2 {
					year = twoDigitYear(n)
				}
			case 'M', 'L':
				month = n
			case 'D':
				yday = n
			case 'd':
				day = n
			case 'H':
				hour = n
			case 'k':
				hour = n % 24
			case 'K':
				hour, hour12 = n, true
			case 'h':
				hour, hour12 = n%12, true
			case 'm':
				minute = n
			case 's':
				sec = n
			case 'S':
				ms = n
			}
			continue
		}
		rest := s[pos:]
		switch it.letter {
		case 'M', 'L':
			m, l := matchName(rest, func(i int) string { return time.Month(i + 1).String() }, 12)
			if l == 0 {
				return time.Time{}, errDateParse
			}
			month, pos = m+1, pos+l
		case 'E':
			_, l := matchName(rest, func(i int) string { return time.Weekday(i).String() }, 7)
			if l == 0 {
				return time.Time{}, errDateParse
			}
			pos += l
		case 'a':
			switch {
			case len(rest) >= 2 && strings.EqualFold(rest[:2], "AM"):
			case len(rest) >= 2 && strings.EqualFold(rest[:2], "PM"):
				pm = true
			default:
				return time.Time{}, errDateParse
			}
			hasAmPm, pos = true, pos+2
		case 'G':
			if len(rest) < 2 || !strings.EqualFold(rest[:2], "AD") && !strings.EqualFold(rest[:2], "BC") {
				return time.Time{}, errDateParse
			}
			bc = strings.EqualFold(rest[:2], "BC")
			pos += 2
		case 'z', 'Z', 'X':
			o, l, ok := parseZone(rest)
			if !ok {
				return time.Time{}, errDateParse
			}
			offset, pos = o, pos+l
		}
	}
	// Java combines AM/PM with the 12-hour fields only; H and k ignore it.
	if hasAmPm && hour12 && pm {
		hour += 12
	}
	if bc {
		year = 1 - year
	}
	// The fields are read in Java's calendar, so "1000-01-01" is Julian.
	var t time.Time
	if yday > 0 {
		t = data.JavaCalendarOrdinalTime(year, yday, hour, minute, sec, ms)
	} else {
		t = data.JavaCalendarTime(year, time.Month(month), day, hour, minute, sec, ms)
	}
	return t.Add(-time.Duration(offset) * time.Second), nil
}

// twoDigitYear puts a two-digit year within 80 years before and 20 years
// after now, as SimpleDateFormat does.
func twoDigitYear(n int) int {
	now := time.Now().UTC()
	start := now.Year() - 80
	y := start - start%100 + n
	if y < start {
		y += 100
	}
	return y
}

// matchName matches the full or three-letter English name of one of n
// values at the start of s, case-insensitively.
func matchName(s string, name func(int) string, n int) (idx, length int) {
	for i := 0; i < n; i++ {
		full := name(i)
		if len(s) >= len(full) && strings.EqualFold(s[:len(full)], full) {
			return i, len(full)
		}
	}
	for i := 0; i < n; i++ {
		short := name(i)[:3]
		if len(s) >= 3 && strings.EqualFold(s[:3], short) {
			return i, 3
		}
	}
	return 0, 0
}

// parseZone reads a zone offset: Z, UTC, GMT, +hh, +hhmm, +hh:mm, or
// GMT/UTC followed by one of the signed forms. It returns seconds east of
// UTC and the length read.
func parseZone(s string) (offset, length int, ok bool) {
	prefix := 0
	switch {
	case strings.HasPrefix(s, "Z"):
		return 0, 1, true
	case strings.HasPrefix(s, "GMT"), strings.HasPrefix(s, "UTC"):
		prefix = 3
		if len(s) == 3 || s[3] != '+' && s[3] != '-' {
			return 0, 3, true
		}
	}
	r := s[prefix:]
	if len(r) < 3 || r[0] != '+' && r[0] != '-' {
		return 0, 0, false
	}
	digits := func(b string) (int, bool) {
		if len(b) != 2 || b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
			return 0, false
		}
		return int(b[0]-'0')*10 + int(b[1]-'0'), true
	}
	h, okh := digits(r[1:3])
	if !okh {
		return 0, 0, false
	}
	l, m := 3, 0
	switch {
	case len(r) >= 6 && r[3] == ':':
		if mm, okm := digits(r[4:6]); okm {
			m, l = mm, 6
		}
	case len(r) >= 5:
		if mm, okm := digits(r[3:5]); okm {
			m, l = mm, 5
		}
	}
	off := h*3600 + m*60
	if r[0] == '-' {
		off = -off
	}
	return off, prefix + l, true
}

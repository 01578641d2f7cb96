// Package format turns numbers into the words runwatch answers with: sizes, counts, token counts, durations,
// rates and shares.
package format

import (
	"fmt"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
)

// Bytes formats a size with SI units and three significant figures: 21.9 TB, 1.08 TB, 512 MB. Past the
// largest prefix (Q, 10^30) it stays there and counts in it: 40,000 QB, not 40000 QB or a made-up unit.
func Bytes(n float64) string {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return "?"
	}
	if n < 0 {
		return "-" + Bytes(-n)
	}
	if n < 1000 {
		return fmt.Sprintf("%.0f B", n)
	}
	v, prefix := humanize.ComputeSI(n)
	if v >= 1000 {
		return Count(v) + " " + prefix + "B"
	}
	return sig3(v) + " " + prefix + "B"
}

// Count formats an integer-ish quantity with thousands separators: 25,000. A value past int64 is
// written out from the float (9,223,372,036,854,776,000), never wrapped to a negative number.
func Count(n float64) string {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return "?"
	}
	r := math.Round(n)
	if math.Abs(r) >= 1<<63 {
		return humanize.Commaf(r)
	}
	return humanize.Comma(int64(r))
}

// maxTokenUnit is the largest unit a token count is said in: people say 25M, 1.08B and 15T tokens, and
// nobody knows what 1P or 1Q tokens are.
const maxTokenUnit = 1e12

// Tokens formats a token count compactly: 565K, 25M, 1.08B; from a thousand trillion on, a count of
// trillions (1,000T).
func Tokens(n float64) string {
	if n < 10000 {
		return Count(n)
	}
	if n >= 1000*maxTokenUnit {
		return Count(n/maxTokenUnit) + "T"
	}
	v, prefix := humanize.ComputeSI(n)
	if prefix == "G" {
		prefix = "B"
	}
	num := sig3(v)
	if strings.Contains(num, ".") {
		num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
	}
	return num + strings.ToUpper(prefix)
}

// TokensRange formats a range of token counts with its two ends to the same decimal places: 29.0M-41.3M,
// not 29M-41.3M, which read as a figure known less well than the other; 25M-30M, 9.5K-12.3K. The high end's
// three significant figures set the places. Ends in different units are each as Tokens says them.
func TokensRange(low, high float64) string {
	lv, lu, lok := tokenUnit(low)
	hv, hu, hok := tokenUnit(high)
	if !lok || !hok || lu != hu {
		return Tokens(low) + "-" + Tokens(high)
	}
	places := 0
	switch {
	case hv < 10:
		places = 2
	case hv < 100:
		places = 1
	}
	l, h := fmt.Sprintf("%.*f", places, lv), fmt.Sprintf("%.*f", places, hv)
	for places > 0 && strings.HasSuffix(l, "0") && strings.HasSuffix(h, "0") {
		l, h, places = l[:len(l)-1], h[:len(h)-1], places-1
	}
	l, h = strings.TrimSuffix(l, "."), strings.TrimSuffix(h, ".")
	return l + lu + "-" + h + hu
}

// tokenUnit splits a token count as Tokens says it into a value and its unit (K, M, B, T); ok is false for
// a count Tokens writes out in full.
func tokenUnit(n float64) (v float64, unit string, ok bool) {
	if n < 10000 || n >= 1000*maxTokenUnit || math.IsNaN(n) {
		return 0, "", false
	}
	v, prefix := humanize.ComputeSI(n)
	if prefix == "G" {
		prefix = "B"
	}
	return v, strings.ToUpper(prefix), true
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Range is an estimate's range as the parenthesis after it: " (2 h 31 min – 4 h 44 min)". A side within
// OneSided of the point is said in words rather than as a figure that repeats it: "3 h (3 h – 6 h 3 min)"
// read in the channel as a typo, where the range says the finish is unlikely to come sooner and may come
// later (the lengths are growing, or every past forecast on the run came out short): "3 h (or later, up to
// 6 h 3 min)". The other side mirrors it: "2 h 32 min (or sooner, down to 1 h 17 min)"; "from 1 h 17 min" read
// as where a span starts.
func Range(sec, low, high float64) string {
	switch {
	case low >= sec*(1-OneSided) && high <= sec*(1+OneSided):
		return ""
	case low >= sec*(1-OneSided):
		return " (or later, up to " + Duration(high) + ")"
	case high <= sec*(1+OneSided):
		return " (or sooner, down to " + Duration(low) + ")"
	}
	return " (" + Duration(low) + " – " + Duration(high) + ")"
}

// OneSided is how close to the point a side of a range is to count as none: 2%, about the rounding of a
// duration in words (3 h 22 min against 3 h 21 min).
const OneSided = 0.02

// Duration formats seconds for people: 45 s, 12 min, 3 h 10 min, 2 d 4 h.
func Duration(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return "?"
	}
	if s <= -0.5 {
		return "-" + Duration(-s)
	}
	switch {
	case s < 0:
		return "0 s"
	case s > 0 && s < 0.5:
		// Time left with items still left is not nothing: "0 s (0 s – 0 s)" read as done.
		return "under 1 s"
	case s < 90:
		return fmt.Sprintf("%.0f s", s)
	case s < 3570: // from 59.5 min on the minutes round to 60: "1 h", not "60 min"
		return fmt.Sprintf("%.0f min", math.Round(s/60))
	case s < 48*3600:
		m := int(math.Round(s / 60))
		h, m := m/60, m%60
		if m == 0 || h >= 10 {
			return fmt.Sprintf("%d h", int(math.Round(s/3600)))
		}
		return fmt.Sprintf("%d h %d min", h, m)
	case s >= 1000*86400:
		// Past a thousand days the hours say nothing, and int(hours) wraps for an ETA of a job whose log
		// reports an absurd total.
		return Count(s/86400) + " d"
	default:
		h := int(math.Round(s / 3600))
		d, h := h/24, h%24
		if h == 0 {
			return fmt.Sprintf("%d d", d)
		}
		return fmt.Sprintf("%d d %d h", d, h)
	}
}

// Span formats a measured stretch of time to the second below an hour: 6 min 48 s, 45 s; from an hour on as
// Duration does.
func Span(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || math.Round(s) >= 3600 {
		return Duration(s)
	}
	// Round once, then split: minutes from the truncated seconds and seconds from the rounded ones turned
	// 119.6 s into "1 min" and 59.6 s into "0 s".
	r := int(math.Round(s))
	m, sec := r/60, r%60
	switch {
	case m == 0:
		return fmt.Sprintf("%d s", sec)
	case sec == 0:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d min %d s", m, sec)
}

// Rate formats a per-second figure with a sensible precision: 1,386 tok/s, 0.71 items/s.
func Rate(v float64, unit string) string {
	switch {
	case v >= 100:
		return Count(v) + " " + unit
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

// Percent formats a fraction 0..1 as a percentage. Under 1% is said in words: a "<" in Slack's mrkdwn
// opens a link or a mention.
func Percent(f float64) string {
	if f > 0 && f < 0.01 {
		return "under 1%"
	}
	return fmt.Sprintf("%.0f%%", f*100)
}

// Plural returns "1 process" or "3 processes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%s %s", Count(float64(n)), many)
}

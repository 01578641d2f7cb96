package reports

import "runwatch/reports/format"

// Bytes formats a size with SI units and three significant figures: 21.9 TB, 1.08 TB, 512 MB.
func Bytes(n float64) string { return format.Bytes(n) }

// Count formats an integer-ish quantity with thousands separators: 25,000.
func Count(n float64) string { return format.Count(n) }

// Tokens formats a token count compactly: 565K, 25M, 1.08B.
func Tokens(n float64) string { return format.Tokens(n) }

// Duration formats seconds for people: 45 s, 12 min, 3 h 10 min, 2 d 4 h.
func Duration(s float64) string { return format.Duration(s) }

// Span is a duration to the second under an hour ("6 min 48 s"), as Duration above it (see format.Span).
func Span(s float64) string { return format.Span(s) }

// Range is an estimate's range as the parenthesis after it (see format.Range).
func Range(sec, low, high float64) string { return format.Range(sec, low, high) }

// Rate formats a per-second figure with a sensible precision: 1,386 tok/s, 0.71 items/s.
func Rate(v float64, unit string) string { return format.Rate(v, unit) }

// Percent formats a fraction 0..1 as a percentage.
func Percent(f float64) string { return format.Percent(f) }

// Plural returns "1 process" or "3 processes".
func Plural(n int, one, many string) string { return format.Plural(n, one, many) }

// TokensRange is format.TokensRange: 29.0M-41.3M.
func TokensRange(low, high float64) string { return format.TokensRange(low, high) }

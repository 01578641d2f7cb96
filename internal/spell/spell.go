// Package spell finds what a mistyped word most likely meant: the run file's unknown keys ("totl" for
// total) and chat questions no rule matched ("etaa?" for ETA).
package spell

// Distance is the edit distance between a and b: insertions, deletions, substitutions and swaps of two
// neighbouring bytes ("statsu" for status is one edit, the slip people make most), each counting 1 (the
// optimal string alignment distance; bytes, as keys and keywords are ASCII).
func Distance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows are all a swap looks back.
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Near reports whether word is a likely misspelling of known: within two edits, and within a third of
// known's length for short words (one edit for "eta"), so "data" is not taken for "eta".
func Near(word, known string) bool {
	return Distance(word, known) <= min(2, max(1, len(known)/3))
}

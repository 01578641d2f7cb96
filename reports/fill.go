package reports

// FreePoint is one reading of a mount's free space.
type FreePoint struct {
	T    float64 `json:"t"` // unix seconds
	Free uint64  `json:"free"`
}

// ShrinkRate fits free space against time over points after since; ok when the fit spans at least
// two minutes and free space is falling.
func ShrinkRate(pts []FreePoint, since float64) (float64, bool) {
	var n, st, sf, stt, stf float64
	var t0, t1 float64
	first := true
	for _, p := range pts {
		if p.T < since {
			continue
		}
		if first {
			t0, first = p.T, false
		}
		t1 = p.T
		x, y := p.T-t0, float64(p.Free)
		n++
		st += x
		sf += y
		stt += x * x
		stf += x * y
	}
	if n < 3 || t1-t0 < 120 {
		return 0, false
	}
	den := n*stt - st*st
	if den == 0 {
		return 0, false
	}
	slope := (n*stf - st*sf) / den
	if slope >= 0 {
		return 0, false
	}
	return -slope, true
}

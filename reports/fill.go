package reports

// FreePoint is one reading of a mount's free space.
type FreePoint struct {
	T    float64 `json:"t"` // unix seconds
	Free uint64  `json:"free"`
}

// FillTrend is how fast a mount's free space shrinks, and the readings that pace rests on.
type FillTrend struct {
	Rate     float64 `json:"bytes_per_s"` // > 0: free space is shrinking
	Span     float64 `json:"span_s"`      // seconds from the first reading fitted to the last
	Readings int     `json:"readings"`
}

// A time to full is an extrapolation, and it may reach only so far past what it was measured on:
// fillReach times the span of the readings behind it (a disk watched shrinking for 36 minutes may be
// said to fill in 6 hours; one watched for 10 seconds of a write burst may not), over at least
// minFillReadings readings (one burst between two readings is not a pace). The evidence asked for grows
// with the forecast, so a disk that really fills is still named early: one filling at a steady pace is
// named once a little under a tenth of its time to full has passed, at any sampling interval.
const (
	fillReach       = 10
	minFillReadings = 5
)

// Forecast is the time in seconds until free bytes run out at the trend's pace; ok only when the trend is
// evidence enough for that forecast (see fillReach).
func (tr FillTrend) Forecast(free uint64) (float64, bool) {
	if tr.Rate <= 0 || tr.Readings < minFillReadings {
		return 0, false
	}
	s := float64(free) / tr.Rate
	return s, tr.Span*fillReach >= s
}

// FillRate fits free space against time over the readings of pts (in time order) taken at or after since.
// Of the windows that end at the last reading it takes the shortest whose forecast its own span supports:
// a fast fill is named as soon as it has shown itself, a slow one is looked at for as long as its forecast
// asks, and a burst of writes is averaged with the quiet around it. When no window does, the trend is the
// fit over all of them, which says the pace without a forecast. ok is false when free space is not falling
// over the window taken, or fewer than three readings are there.
func FillRate(pts []FreePoint, since float64) (FillTrend, bool) {
	if len(pts) == 0 {
		return FillTrend{}, false
	}
	last := pts[len(pts)-1]
	// Times and free bytes relative to the last reading keep the sums small.
	var n, sx, sy, sxx, sxy float64
	var whole FillTrend
	falling := false
	for i := len(pts) - 1; i >= 0 && pts[i].T >= since; i-- {
		x, y := pts[i].T-last.T, float64(pts[i].Free)-float64(last.Free)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		den := n*sxx - sx*sx
		if n < 3 || den == 0 {
			continue
		}
		slope := (n*sxy - sx*sy) / den
		whole, falling = FillTrend{Rate: -slope, Span: -x, Readings: int(n)}, slope < 0
		if _, firm := whole.Forecast(last.Free); falling && firm {
			return whole, true
		}
	}
	if !falling {
		return FillTrend{}, false
	}
	return whole, true
}

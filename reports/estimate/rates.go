package estimate

// throughput measures the rates over the last window seconds of wall time and over the whole history.
func (s series) throughput(window float64) Throughput {
	var tp Throughput
	n := len(s.pts)
	if n < 2 {
		return tp
	}
	last := s.pts[n-1]
	from := 0
	for i := n - 2; i >= 0; i-- {
		if last.t-s.pts[i].t >= window {
			from = i
			break
		}
	}
	first := s.pts[0]
	tp.WindowS = last.t - s.pts[from].t
	if tp.WindowS > 0 {
		tp.ItemsPerS = (last.done - s.pts[from].done) / tp.WindowS
	}
	if d := last.t - first.t; d > 0 {
		tp.RunItemsPerS = (last.done - first.done) / d
	}
	// Token counts: between the latest points where the engines answered.
	lastG := -1
	for i := n - 1; i >= 0; i-- {
		if s.pts[i].hasG {
			lastG = i
			break
		}
	}
	if lastG < 0 {
		return tp
	}
	for i := from; i < lastG; i++ {
		if s.pts[i].hasG {
			if d := s.pts[lastG].t - s.pts[i].t; d > 0 {
				tp.TokensPerS = (s.pts[lastG].g - s.pts[i].g) / d
			}
			break
		}
	}
	for i := 0; i < lastG; i++ {
		if s.pts[i].hasG {
			if d := s.pts[lastG].t - s.pts[i].t; d > 0 {
				tp.RunTokensPerS = (s.pts[lastG].g - s.pts[i].g) / d
			}
			break
		}
	}
	return tp
}

package reports

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Target is a path a question names, resolved like a configured path.
type Target struct {
	Path     string
	Resolved string
	Exists   bool
	Mount    string
	FSType   string
	Device   string
	// MountPoint is true when the path is itself a mount point, so every file on that mount counts.
	MountPoint bool
}

// maxListed bounds the lines of a list in a chat answer; JSON carries the rest.
const maxListed = 10

// AnswerWrites answers "are we writing to /shared?". With a zero Target it answers for the run's
// protected mounts.
func AnswerWrites(run string, st Storage, t Target) Message {
	subject := "the protected mounts"
	var hits []WriterInfo
	if t.Path != "" {
		subject = Code(t.Path)
		for _, w := range st.Writers {
			f := strings.TrimSuffix(w.File, " (deleted)")
			// A protected writer counts for the protected path it lands on, however it got there
			// (a bind mount, the same export mounted twice): BuildStorage already decided that.
			landsOn := w.Protected && (w.ProtectedPath == t.Path || w.ProtectedPath == t.Resolved)
			if landsOn || Under(f, t.Resolved) || Under(f, t.Path) || (t.MountPoint && w.Mount == t.Mount) {
				hits = append(hits, w)
			}
		}
	} else {
		if len(st.ProtectedMounts) == 1 {
			subject = Code(st.ProtectedMounts[0].Path)
		}
		for _, w := range st.Writers {
			if w.Protected {
				hits = append(hits, w)
			}
		}
	}
	m := Message{Title: fmt.Sprintf("%s · writes", run)}
	// No writes yet is half the story when an output already resolves there; then the processes that could
	// not be inspected go below, so the output that will land there is not buried behind them.
	landing := 0
	gaps := st.subjectGaps(t)
	if len(hits) == 0 && !scanFailed(gaps) {
		for _, p := range st.OutputsInProtected() {
			if t.Path == "" || p.ProtectedPath == t.Path || p.ProtectedPath == t.Resolved || Under(p.Resolved, t.Resolved) {
				landing++
			}
		}
	}
	unseen := hostGaps(gaps)
	var verdict string
	switch {
	case t.Path == "" && len(st.ProtectedMounts) == 0:
		verdict = fmt.Sprintf(":information_source: No protected mounts are configured for run %s, so nothing counts as a protected write. Add `protected:` (e.g. `/shared`) to the run file, or ask about a path: _are we writing to /data?_", Esc(run))
	case len(hits) > 0:
		// Another host's writer is a yes whether or not this host's scan ran: the status and "is it
		// safe?" say so from the same facts, and this host's failed scan goes below.
		// An alarm only for a write that breaks the run file's rule: the job writing its own output to
		// an unprotected /data is the answer, not a warning.
		alarm := ":rotating_light: "
		if t.Path != "" && !slices.ContainsFunc(hits, func(w WriterInfo) bool { return w.Protected }) {
			alarm = ""
		}
		verdict = fmt.Sprintf("%s*Yes* — %s writing to %s:", alarm, Plural(st.writingCount(hits, protectedAsked(st, t)...), "process is", "processes are"), subject)
	case scanFailed(gaps):
		verdict = fmt.Sprintf(":warning: *Unknown* — I could not scan open files: %s.", Esc(st.ScanError))
		if len(unseen) > 0 {
			verdict += " Nor c" + strings.TrimPrefix(cantTell(unseen), "C") + "."
		}
	case landing > 0:
		// The output that will land there is the news, with the severity every answer gives it.
		verdict = fmt.Sprintf("%s *Not yet* — no writes seen to %s, but %s inside it (below): the job's writes will land there.",
			ProtectedSeverity(false, landing), subject, Plural(landing, "output resolves", "outputs resolve"))
		if len(unseen) > 0 {
			verdict += " *" + cantTell(unseen) + "."
		}
	case len(unseen) > 0:
		// What could not be seen leads; what was seen follows: "Can't tell for 3 hosts: Prometheus did not
		// answer within 2s. On this host no process writes to /shared."
		verdict = ":grey_question: *" + cantTell(unseen) + ". " + st.seenHere(subject, gaps) + "."
	case len(processGaps(gaps)) > 0:
		verdict = fmt.Sprintf(":large_yellow_circle: *No writes seen* to %s, but %s.", subject, st.processClause(processGaps(gaps)))
	case (st.Invisible > 0 || st.ScanError != "") && len(st.quietFor(t)) > 0:
		// The device answers where the scan could not: a plain no, from its counters.
		verdict = ":large_green_circle: *No* — " + quietClause(st.quietFor(t)) + st.unseenNeedNot() + "."
	default:
		verdict = fmt.Sprintf(":large_green_circle: *No* — no process is writing to %s.", subject) + st.remoteQuiet(t)
	}
	if len(hits) == 0 && landing == 0 && !scanFailed(gaps) {
		// "No" is half the answer: where the job does write is the other ("running fine on /data").
		if w := jobWritesLine(st.jobWriters()); w != "" {
			verdict += " " + w
		}
	}
	if t.Path != "" && !t.Exists && len(hits) == 0 {
		verdict += fmt.Sprintf(" (%s does not exist here; it would land on %s.)", Code(t.Path), Code(t.Mount))
	} else if t.Path != "" && t.Mount != "" && len(hits) > 0 {
		// The writers' list follows the colon; the mount goes before it.
		verdict = strings.TrimSuffix(verdict, ":") + fmt.Sprintf(", which is on %s (%s %s):", Code(t.Mount), Esc(t.FSType), Code(t.Device))
	} else if t.Path != "" && t.Mount != "" {
		verdict += fmt.Sprintf(" It is on %s (%s %s).", Code(t.Mount), Esc(t.FSType), Code(t.Device))
	}
	m.Sections = append(m.Sections, verdict)
	if len(hits) > 0 {
		m.Sections = append(m.Sections, writerLines(hits, st.WritersOmitted))
	}
	if lines := outputLines(st); lines != "" {
		m.Sections = append(m.Sections, "*Where the outputs resolve*\n"+lines)
	}
	if pg := processGaps(gaps); len(pg) > 0 && (len(hits) > 0 || landing > 0) {
		m.Context = append(m.Context, upperFirst(st.processClause(pg)))
	}
	if scanFailed(gaps) && len(hits) > 0 {
		m.Context = append(m.Context, fmt.Sprintf(":warning: On this host I could not scan open files: %s.", Esc(st.ScanError)))
	}
	if len(unseen) > 0 && len(hits) > 0 {
		m.Context = append(m.Context, ":grey_question: *"+cantTell(unseen)+".")
	}
	return m
}

// subjectGaps are the gaps of st's coverage that leave t unseen (the run's protected mounts when t is
// zero). A path no protected path covers is answered from this machine alone (other hosts' exporters
// report protected paths only): its gaps are this machine's.
func (st Storage) subjectGaps(t Target) []Gap {
	if t.Path != "" {
		t.Path = filepath.Clean(t.Path)
	}
	var paths []string
	for _, pm := range st.ProtectedMounts {
		if pp := filepath.Clean(pm.Path); t.Path == "" || pp == t.Path || pp == t.Resolved || Under(t.Path, pp) || Under(t.Resolved, pp) || Under(pp, t.Path) {
			paths = append(paths, pp)
		}
	}
	if len(paths) > 0 {
		return st.Coverage.Gaps("*", paths...)
	}
	// No device evidence is kept for such a path: this machine's scan is all there is.
	var gaps []Gap
	if st.ScanError != "" {
		gaps = append(gaps, Gap{Source: GapScan, Hosts: []string{""}, Why: "I could not scan open files: " + st.ScanError})
	}
	if st.Invisible > 0 {
		gaps = append(gaps, Gap{Source: GapProcesses, Hosts: []string{""}, Processes: st.Invisible, Why: Plural(st.Invisible, "process", "processes") + " could not be inspected"})
	}
	return gaps
}

// seenHere says what was seen where the gaps leave something unseen elsewhere: this machine's scan,
// and the other hosts whose exporters answered. "On this host no process writes to `/shared`, nor on
// the 3 other hosts whose exporters answered".
func (st Storage) seenHere(subject string, gaps []Gap) string {
	var local, remote []Gap
	for _, g := range processGaps(gaps) {
		if slices.Contains(g.Hosts, "") {
			local = append(local, g)
		} else {
			remote = append(remote, g)
		}
	}
	var s string
	switch {
	case !slices.Contains(st.Coverage.Hosts, ""):
		s = "I could not read this host's open files either"
	case len(local) > 0:
		s = fmt.Sprintf("On this host no writes seen to %s, but %s", subject, st.processClause(local))
	default:
		s = "On this host no process writes to " + subject
	}
	switch n := st.Coverage.remoteAnswered(); {
	case n == 1:
		s += ", nor on the other host whose exporter answered"
	case n > 1:
		s += fmt.Sprintf(", nor on the %d other hosts whose exporters answered", n)
	}
	if len(remote) > 0 {
		s += "; " + st.processClause(remote)
	}
	return s
}

// processClause says which processes could not be inspected, on this machine (invisibleClause) and on
// other hosts (their exporters' counts).
func (st Storage) processClause(gaps []Gap) string {
	var parts []string
	for _, g := range gaps {
		for _, h := range g.Hosts {
			if h == "" {
				parts = append(parts, invisibleClause(st))
				continue
			}
			parts = append(parts, fmt.Sprintf("on host %s %s could not be inspected by its exporter", Code(h), Plural(g.Processes, "process", "processes")))
		}
	}
	return strings.Join(parts, "; ")
}

// upperFirst capitalises the first letter of s.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// jobWriters are where the job does write, for an answer that says where it does not: this machine's
// writers to the outputs, else to the watched mounts, off the protected paths.
func (st Storage) jobWriters() []WriterInfo {
	var outputs, watched []WriterInfo
	for _, w := range st.Writers {
		switch {
		case w.Protected || w.Host != "":
		case w.Output:
			outputs = append(outputs, w)
		default:
			watched = append(watched, w)
		}
	}
	if len(outputs) > 0 {
		return outputs
	}
	return watched
}

// jobWritesLine says where the job writes, process → file → mount: "The job writes to `/data`:
// `python3` (pid 4242) → `/data/out/part-0001.jsonl`, and 3 more files." "" when nothing is written.
func jobWritesLine(ws []WriterInfo) string {
	if len(ws) == 0 {
		return ""
	}
	var mounts []string
	for _, w := range ws {
		if m := Code(w.Mount); w.Mount != "" && !slices.Contains(mounts, m) {
			mounts = append(mounts, m)
		}
	}
	s := "The job writes"
	if len(mounts) > 0 {
		s += " to " + strings.Join(mounts, " and ")
	}
	s += fmt.Sprintf(": %s (pid %d) → %s", Code(ws[0].Command), ws[0].PID, Code(ws[0].File))
	if len(ws) > 1 {
		s += fmt.Sprintf(", and %s", Plural(len(ws)-1, "more file", "more files"))
	}
	return s + "."
}

// protectedAsked are the configured protected paths a writes question about t covers whole: all of
// them without a target, else the one t names.
func protectedAsked(st Storage, t Target) []string {
	var out []string
	for _, pp := range protectedPaths(st.ProtectedMounts) {
		if t.Path == "" || pp == t.Path || pp == t.Resolved {
			out = append(out, pp)
		}
	}
	return out
}

// writerLines lists the first of ws; omitted is how many writers the report itself left out.
func writerLines(ws []WriterInfo, omitted int) string {
	var b strings.Builder
	for i, w := range ws {
		if i == maxListed {
			if omitted > 0 {
				fmt.Fprintf(&b, "• …and more open files: %s listed, %s more left out of the report\n", Count(float64(len(ws)-maxListed)), Count(float64(omitted)))
			} else {
				fmt.Fprintf(&b, "• …and %d more open files\n", len(ws)-maxListed)
			}
			break
		}
		mark := ""
		if w.Protected {
			mark = " :warning: protected"
		}
		if w.Host != "" {
			fmt.Fprintf(&b, "• on host %s: %s (%s) → %s on %s%s\n", Code(w.Host), Code(w.Command), Plural(w.Processes, "process", "processes"), Code(w.File), Code(w.Mount), mark)
			continue
		}
		fmt.Fprintf(&b, "• %s (pid %d) → %s on %s%s\n", Code(w.Command), w.PID, Code(w.File), Code(w.Mount), mark)
	}
	return strings.TrimRight(b.String(), "\n")
}

// outputLines lists where each output resolves.
func outputLines(st Storage) string {
	var b strings.Builder
	for _, p := range st.Paths {
		if p.Role != RoleOutput {
			continue
		}
		b.WriteString("• " + st.pathLine(p) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// pathLine is where p resolves; a path inside a protected mount is marked with the severity of that
// landing (ProtectedSeverity), an alarm once a process writes there.
func (st Storage) pathLine(p PathInfo) string {
	var b strings.Builder
	b.WriteString(Code(p.Path))
	if p.Resolved != "" && p.Resolved != p.Path {
		b.WriteString(" → " + Code(p.Resolved))
	}
	if p.Mount != "" {
		fmt.Fprintf(&b, " on %s%s (%s %s)", Code(p.Mount), onHost(p.Host), Esc(p.FSType), Code(p.Device))
	} else {
		b.WriteString(onHost(p.Host)) // a host whose filesystems could not be read
	}
	if p.FreeBytes != nil {
		fmt.Fprintf(&b, ", %s free", Bytes(float64(*p.FreeBytes)))
	}
	if !p.Exists {
		b.WriteString(", not created yet")
	}
	if p.Protected {
		b.WriteString(" " + ProtectedSeverity(st.writingTo(p.ProtectedPath), 1) + " *inside protected " + Code(p.ProtectedPath) + "*")
	}
	if p.Error != "" {
		b.WriteString(" — " + Esc(p.Error))
	}
	return b.String()
}

// AnswerWhere answers "where does the output go?".
func AnswerWhere(run string, st Storage) Message {
	m := Message{Title: fmt.Sprintf("%s · outputs", run)}
	lines := outputLines(st)
	if lines == "" {
		m.Sections = append(m.Sections, fmt.Sprintf("No outputs are configured for run %s. Add `outputs:` to the run file to have them checked.", Esc(run)))
		var watched []string
		for _, p := range st.Paths {
			watched = append(watched, "• "+st.pathLine(p))
		}
		if len(watched) > 0 {
			m.Sections = append(m.Sections, "*Watched paths*\n"+strings.Join(watched, "\n"))
		}
		return m
	}
	landing := st.OutputsInProtected()
	onProt, writing := len(landing), false
	for _, p := range landing {
		writing = writing || st.writingTo(p.ProtectedPath)
	}
	verdict := ":large_green_circle: Every output lands off the protected mounts."
	if onProt > 0 {
		verdict = fmt.Sprintf("%s %s on a protected mount.", ProtectedSeverity(writing, onProt), Plural(onProt, "output lands", "outputs land"))
	}
	if len(st.ProtectedMounts) == 0 {
		verdict = "No protected mounts are configured."
	}
	m.Sections = append(m.Sections, verdict, lines)
	return m
}

// AnswerFree answers "how much space is left on /data?" (and "will the disk fill?") for the given
// paths: whether the disk outlasts the job when both rates are known, that it lasts over a month
// when the write rate is that slow, and which capacity plans do not fit on the mount: the pace of
// the writes so far says nothing about the hidden states still to come.
func AnswerFree(run string, paths []PathInfo, rates []WriteRate, etaS *float64, plans []PlanResult) Message {
	m := Message{Title: fmt.Sprintf("%s · space", run)}
	seen := map[string]bool{}
	for _, p := range paths {
		key := p.Host + "\x00" + p.Mount
		if seen[key] {
			continue
		}
		seen[key] = true
		m.Sections = append(m.Sections, freeLine(p, heldOn(p, paths, plans), rates, etaS, plans))
	}
	if len(m.Sections) == 0 {
		m.Sections = append(m.Sections, "No paths to report on.")
	}
	return m
}

// maxHeld bounds the paths a space answer names on one mount; the rest are counted ("and 2 more").
const maxHeld = 3

// heldOn is every path of paths and every plan target on p's mount (p's own first), each once, the mount
// point itself left out: "holds /data/output" named one of three outputs on that disk.
func heldOn(p PathInfo, paths []PathInfo, plans []PlanResult) []string {
	var held []string
	add := func(path string) {
		if path != "" && path != p.Mount && !slices.Contains(held, path) {
			held = append(held, path)
		}
	}
	for _, q := range paths {
		if q.Host == p.Host && q.Mount == p.Mount {
			add(q.Path)
		}
	}
	for _, pl := range plans {
		if pl.Host == p.Host && pl.Mount == p.Mount {
			add(pl.Target)
		}
	}
	return held
}

// heldList is "`a`, `b`, `c` and 2 more", at most maxHeld paths named.
func heldList(held []string) string {
	var names []string
	for i, h := range held {
		if i == maxHeld {
			break
		}
		names = append(names, Code(h))
	}
	switch rest := len(held) - len(names); {
	case rest > 0:
		return strings.Join(names, ", ") + fmt.Sprintf(" and %d more", rest)
	case len(names) > 1:
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return strings.Join(names, "")
}

func freeLine(p PathInfo, held []string, rates []WriteRate, etaS *float64, plans []PlanResult) string {
	var b strings.Builder
	name := Code(p.Mount)
	if p.Mount == "" {
		name = Code(p.Path)
	}
	if p.FreeBytes == nil || p.TotalBytes == nil {
		fmt.Fprintf(&b, ":warning: %s%s: free space unknown", name, onHost(p.Host))
		if p.Error != "" {
			b.WriteString(" — " + Esc(p.Error))
		}
		return b.String()
	}
	used := 0.0
	if *p.TotalBytes > 0 {
		used = float64(*p.UsedBytes) / float64(*p.UsedBytes+*p.FreeBytes)
	}
	fmt.Fprintf(&b, "%s%s (%s %s) has *%s* free of %s (%s used)", name, onHost(p.Host), Esc(p.FSType), Code(p.Device),
		Bytes(float64(*p.FreeBytes)), Bytes(float64(*p.TotalBytes)), Percent(used))
	if len(held) > 0 {
		fmt.Fprintf(&b, " — holds %s", heldList(held))
	}
	b.WriteString(".")
	written := 0.0
	for _, r := range rates {
		if r.Mount == p.Mount && r.Host == p.Host && r.BytesPerS > 0 {
			fmt.Fprintf(&b, " Writing %s/s.", Bytes(r.BytesPerS))
			written = r.BytesPerS
		}
	}
	fills, pace := p.FillsInS, "the current rate"
	if written > 0 && fills == nil {
		// BuildStorage leaves the time to full out past a month: say so rather than nothing. A write rate that
		// would fill the disk within a month, with no time to full beside it (a remote host without a free-space
		// trend yet, or a trend that other writers' deletions hold back), is that rate's time to full: the demo's
		// "Writing 25.0 kB/s." of 64.7 GB, or 50.3 MB/s of 966 GB (5 h 20 min), said nothing more. But it is the
		// writes between two readings, not a trend (FillTrend.Forecast): it may say the disk lasts, not raise the
		// alarm that it will not; a burst of seconds did ("fills in 6 h 4 min (!!) — before the job ends").
		d := float64(*p.FreeBytes) / written
		switch {
		case d >= maxFillHorizon:
			b.WriteString(" At that rate it lasts over a month.")
		case etaS != nil && d < *etaS:
			fmt.Fprintf(&b, " At that rate it would fill in %s, before the job ends (%s more); free space has not shrunk that fast for long enough to say it will, and a warning follows if it does.",
				Duration(d), Duration(*etaS))
		default:
			fills, pace = &d, "that rate"
		}
	}
	if fills != nil {
		// The time to full is from the free-space trend when there is one, and the disk's other
		// writers count there: name that pace when it is not this write rate, or the two contradict
		// ("Writing 1.66 kB/s. At the current rate it fills in 12 d" of 72.8 GB).
		if shrink := float64(*p.FreeBytes) / *fills; written > 0 && (shrink > 1.25*written || shrink < 0.8*written) {
			fmt.Fprintf(&b, " Free space shrinks at %s/s: it fills in *%s*", Bytes(shrink), Duration(*fills))
		} else {
			fmt.Fprintf(&b, " At %s it fills in *%s*", pace, Duration(*fills))
		}
		if etaS != nil {
			if *fills < *etaS {
				fmt.Fprintf(&b, " :rotating_light: — before the job ends (%s more).", Duration(*etaS))
			} else {
				fmt.Fprintf(&b, "; the job needs %s more, so it lasts.", Duration(*etaS))
			}
		} else {
			b.WriteString(".")
		}
	}
	names, needs := unfitOn(p, plans)
	switch n := len(names); {
	case n == 1:
		fmt.Fprintf(&b, " :red_circle: Plan %s does not fit here: it needs %s.", names[0], needs[0])
	case n > 1:
		for i := range names {
			names[i] += " (" + needs[i] + ")"
		}
		fmt.Fprintf(&b, " :red_circle: Plans %s and %s do not fit here.", strings.Join(names[:n-1], ", "), names[n-1])
	}
	if p.Protected {
		b.WriteString(" :warning: protected mount.")
	}
	return b.String()
}

// unfitOn names (escaped) each plan of plans that does not fit on p's mount, with the bytes it needs there
// (the high figure of a projection, the one its verdict used).
func unfitOn(p PathInfo, plans []PlanResult) (names, needs []string) {
	for _, pl := range plans {
		if pl.Mount == p.Mount && pl.Host == p.Host && pl.Fits != nil && !*pl.Fits {
			need := pl.BytesNeeded
			if pl.BytesHigh > 0 {
				need = pl.BytesHigh
			}
			names, needs = append(names, Esc(pl.Name)), append(needs, Bytes(need))
		}
	}
	return names, needs
}

// invisibleClause says which processes could not be inspected and what would show them: "1 process
// could not be inspected (`tini`, pid 1): …". The advice fits who runs runwatch: another user's processes
// need root (never "run as the job's user" to someone who is); as root the advice is the namespace.
func invisibleClause(st Storage) string {
	s := Plural(st.Invisible, "process", "processes") + " could not be inspected"
	if len(st.Hidden) > 0 {
		var names []string
		for _, h := range st.Hidden {
			name := "pid " + fmt.Sprint(h.PID)
			if h.Command != "" {
				name = Code(h.Command) + " " + name
			}
			names = append(names, name)
		}
		if st.Invisible > len(st.Hidden) {
			names = append(names, fmt.Sprintf("%d more", st.Invisible-len(st.Hidden)))
		}
		s += ": " + strings.Join(names, ", ")
	}
	it := "it"
	if st.Invisible > 1 {
		it = "them"
	}
	if st.AsRoot {
		// Root that cannot read a process's fd table is outside its reach: another PID namespace (a
		// sandbox's or container's init is PID 1 there) or a security module.
		return s + ". Even as root I can't read " + it + ": a sandbox or container init (PID 1 of its namespace) or a security policy hides " + it + "; check " + it + " from inside that sandbox"
	}
	me := st.ScannedAs.User
	if me == "" {
		return s + ". Run runwatch as the job's user or as root to see " + it
	}
	var others []string
	mine := 0
	for _, o := range st.InvisibleOwners {
		if o.UID == st.ScannedAs.UID {
			mine += o.Processes
			continue
		}
		if len(others) < 3 {
			others = append(others, fmt.Sprintf("%s %d", Code(o.User), o.Processes))
		}
	}
	var parts []string
	if len(others) > 0 {
		parts = append(parts, fmt.Sprintf("other users' (%s): I run as %s and see every process of %s's, the job's too if it runs as %s; root would see the rest",
			strings.Join(others, ", "), Code(me), Code(me), Code(me)))
	}
	if mine > 0 {
		parts = append(parts, fmt.Sprintf("%d run as %s, like me, but in another PID namespace or not dumpable: only root sees %s", mine, Code(me), it))
	}
	if len(parts) == 0 {
		return s + ". Run runwatch as root to see " + it
	}
	return s + "; " + strings.Join(parts, "; ")
}

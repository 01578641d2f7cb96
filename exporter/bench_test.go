package exporter

import (
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/monitor"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// benchProcesses counts the processes in /proc.
func benchProcesses(b *testing.B) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			n++
		}
	}
	return n
}

// BenchmarkExporterScrape600 measures one scrape of a node with 600 processes: the machine's own,
// topped up with `sleep`s that each hold a file open for writing, a third of them under the run's
// protected path. It reports CPU seconds per scrape (user+system of this process) and the series
// one scrape returns.
func BenchmarkExporterScrape600(b *testing.B) {
	dir := b.TempDir()
	shared, out := filepath.Join(dir, "shared"), filepath.Join(dir, "out")
	os.MkdirAll(shared, 0o755)
	os.MkdirAll(out, 0o755)
	var cmds []*exec.Cmd
	b.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	for i := 0; benchProcesses(b) < 600; i++ {
		target := out
		if i%3 == 0 {
			target = shared
		}
		f, err := os.OpenFile(filepath.Join(target, fmt.Sprintf("part-%05d", i)), os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		c := exec.Command("sleep", "600")
		c.ExtraFiles = []*os.File{f}
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		cmds = append(cmds, c)
	}
	file := &config.File{Source: "bench", Runs: []config.Run{{Name: "synth", Outputs: []string{out}, Protected: []string{shared}}}}
	m, _, err := monitor.New(file, monitor.Options{ProbeTimeout: 30 * time.Second, RateWindow: -1, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(New(m, Options{}).Handler())
	defer srv.Close()
	scrape := func() string {
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	series := 0
	for _, line := range strings.Split(scrape(), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			series++
		}
	}
	procs := benchProcesses(b)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		scrape()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / time.Duration(b.N)
	b.ReportMetric(cpu.Seconds()*1000, "cpu-ms/scrape")
	b.ReportMetric(float64(series), "series")
	b.ReportMetric(float64(procs), "processes")
}

package monitor

// Benchmarks of the shared probes at scale: the writer scan with its classification at 100, 1,000
// and 5,000 processes; 200 storage questions at once over 10 runs; and a sampling bot's CPU and
// retained memory for 1, 10 and 50 runs. They read a /proc-like tree (fdinfo gives each file's
// mount), whose mount table puts a watched /data and a protected /shared under a temporary
// directory, so every writer lands on a mount the runs watch.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/probes"
)

// benchNode is a /proc tree and the directories its mounts stand for.
type benchNode struct {
	proc, data, shared string
}

// newBenchNode writes a /proc of procs processes, each holding written files open on the watched
// /data (perProc of them, the last one of one process in ten under the protected /shared instead),
// a socket and a file open read-only.
func newBenchNode(b *testing.B, procs, perProc int) benchNode {
	b.Helper()
	base := b.TempDir()
	n := benchNode{proc: filepath.Join(base, "proc"), data: filepath.Join(base, "data"), shared: filepath.Join(base, "shared")}
	for _, d := range []string{n.data, n.shared, filepath.Join(n.proc, "1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	mountinfo := fmt.Sprintf("20 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n30 20 259:3 / %s rw - xfs /dev/nvme1n1 rw\n40 20 0:52 / %s rw - nfs4 nas:/export rw\n",
		n.data, n.shared)
	if err := os.WriteFile(filepath.Join(n.proc, "1", "mountinfo"), []byte(mountinfo), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("1", filepath.Join(n.proc, "self")); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.proc, "diskstats"), []byte(" 259       3 nvme1n1 1000 0 8000 100 500 0 4000 300 0 400 400 0 0 0 0 0 0\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for p := range procs {
		dir := filepath.Join(n.proc, fmt.Sprint(10000+p))
		for _, d := range []string{"fd", "fdinfo"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte("python3\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		fd := 3
		add := func(target string, flags string, mnt int) {
			if err := os.Symlink(target, filepath.Join(dir, "fd", fmt.Sprint(fd))); err != nil {
				b.Fatal(err)
			}
			info := fmt.Sprintf("pos:\t0\nflags:\t%s\nmnt_id:\t%d\nino:\t%d\n", flags, mnt, fd)
			if err := os.WriteFile(filepath.Join(dir, "fdinfo", fmt.Sprint(fd)), []byte(info), 0o644); err != nil {
				b.Fatal(err)
			}
			fd++
		}
		add(fmt.Sprintf("socket:[%d]", 100000+p), "02", 9)
		add(filepath.Join(n.data, "models", "shard-0001.safetensors"), "0100000", 30)
		for i := range perProc {
			if i == perProc-1 && p%10 == 0 {
				add(filepath.Join(n.shared, fmt.Sprintf("hs-%d-%03d.bin", p, i)), "0100001", 40)
				continue
			}
			add(filepath.Join(n.data, fmt.Sprintf("out-%d", p%10), fmt.Sprintf("part-%d-%03d.jsonl", p, i)), "0100001", 30)
		}
	}
	return n
}

// runs are n runs on the node: each writes its own output on /data, watches /data and protects
// /shared.
func (n benchNode) runs(count int) *config.File {
	f := &config.File{Source: "bench"}
	for i := range count {
		out := filepath.Join(n.data, fmt.Sprintf("out-%d", i%10))
		f.Runs = append(f.Runs, config.Run{Name: fmt.Sprintf("run-%02d", i), Outputs: []string{out}, Watch: []string{n.data}, Protected: []string{n.shared}})
	}
	return f
}

func benchUsage(string) (probes.Usage, error) {
	return probes.Usage{Total: 100 << 30, Free: 40 << 30, Used: 60 << 30}, nil
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWriterScan is one storage status of 10 runs: the /proc scan and each run's storage
// report from it, at 100, 1,000 and 5,000 processes with four written files each.
func BenchmarkWriterScan(b *testing.B) {
	for _, procs := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			node := newBenchNode(b, procs, 4)
			clock := fake.NewClock(time.Unix(1_800_000_000, 0))
			m, _, err := New(node.runs(10), Options{ProcRoot: node.proc, Now: clock.Now, StatFS: probes.NewStatFSFunc(time.Minute, benchUsage)})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				clock.Add(time.Minute)
				st := m.Status(context.Background(), Need{Storage: true})
				if rs := st.Runs[9]; len(rs.Problems) > 0 || !rs.Storage.ProtectedWrites {
					b.Fatalf("run 9: problems %+v, protected writes %v; want none and true", rs.Problems, rs.Storage.ProtectedWrites)
				}
			}
		})
	}
}

// BenchmarkStorageConcurrent asks 200 storage questions at once over 10 runs, as the long-lived
// bot answers them (an evaluation shared by identical questions), and reports the 99th percentile
// of the time to answer, at the host (640 processes, 15 written files each: 9,600 writers
// on a watched mount) and at 5,000 processes.
func BenchmarkStorageConcurrent(b *testing.B) {
	for _, tc := range []struct{ procs, perProc int }{{640, 15}, {5000, 4}} {
		b.Run(fmt.Sprintf("procs=%d", tc.procs), func(b *testing.B) {
			node := newBenchNode(b, tc.procs, tc.perProc)
			clock := fake.NewClock(time.Unix(1_800_000_000, 0))
			m, _, err := New(node.runs(10), Options{ProcRoot: node.proc, Now: clock.Now, Fresh: 10 * time.Second,
				StatFS: probes.NewStatFSFunc(time.Minute, benchUsage), ProbeTimeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			for b.Loop() {
				clock.Add(time.Minute)
				took := make([]time.Duration, 200)
				var wg sync.WaitGroup
				for i := range took {
					wg.Add(1)
					go func() {
						defer wg.Done()
						start := time.Now()
						rs, err := m.RunStatus(context.Background(), fmt.Sprintf("run-%02d", i%10), Need{Storage: true})
						took[i] = time.Since(start)
						if err != nil || len(rs.Problems) > 0 {
							b.Errorf("question %d: %v, problems %+v", i, err, rs.Problems)
						}
					}()
				}
				wg.Wait()
				lat = append(lat, took...)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
		})
	}
}

// BenchmarkServeSampling samples every run as `bot serve` does at a 1 s interval (a writer scan
// every 30 samples, answers reading evaluations up to 0.5 s old) and reports the CPU one sample
// takes, as a share of a core at that interval, and the heap that stays in use afterwards, for 1,
// 10 and 50 runs at the host (640 processes, 9,600 writers on a watched mount) and for
// 10 runs at 5,000 processes.
func BenchmarkServeSampling(b *testing.B) {
	for _, tc := range []struct{ runs, procs, perProc int }{{1, 640, 15}, {10, 640, 15}, {50, 640, 15}, {10, 5000, 4}} {
		b.Run(fmt.Sprintf("runs=%d/procs=%d", tc.runs, tc.procs), func(b *testing.B) {
			node := newBenchNode(b, tc.procs, tc.perProc)
			clock := fake.NewClock(time.Unix(1_800_000_000, 0))
			m, _, err := New(node.runs(tc.runs), Options{ProcRoot: node.proc, Now: clock.Now, Fresh: 500 * time.Millisecond, ScanEvery: 30,
				StatFS: probes.NewStatFSFunc(time.Minute, benchUsage), ProbeTimeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			m.Sample(context.Background())
			cpu0 := cpuTime(b)
			for b.Loop() {
				clock.Add(time.Second)
				m.Sample(context.Background())
			}
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(100*cpu.Seconds()/float64(b.N), "%core@1s")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
			runtime.KeepAlive(m)
		})
	}
}

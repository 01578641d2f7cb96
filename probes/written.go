package probes

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// Written is what a hidden-state extraction has put in its target directory so far: how many
// bytes, and, from the safetensors headers, how many tokens those bytes hold.
type Written struct {
	Dir         string
	Files       int   // regular files counted
	Bytes       int64 // their size
	Safetensors int   // of which .safetensors files
	// SafetensorsBytes is the size of the .safetensors files; TokensInFiles the tokens they hold,
	// read from the headers of up to WrittenLimits.Headers of them (the newest) and extrapolated
	// by bytes to the rest. 0 when no header names its sequence length.
	SafetensorsBytes int64
	TokensInFiles    float64
	HeadersRead      int
	// Newest is the latest modification time seen; Truncated says the walk stopped at a limit, and Cut
	// which, in words ("at the 20,000-file limit", "directories over 4 levels deep not read").
	Newest    time.Time
	Truncated bool
	Cut       string
}

// WrittenLimits bound a scan of a target directory, which may hold a million files on NFS.
type WrittenLimits struct {
	Files   int // files visited (default 100,000)
	Depth   int // directory levels below the target (default 4)
	Headers int // safetensors headers read (default 64)
}

func (l WrittenLimits) withDefaults() WrittenLimits {
	if l.Files <= 0 {
		l.Files = 100_000
	}
	if l.Depth <= 0 {
		l.Depth = 4
	}
	if l.Headers <= 0 {
		l.Headers = 64
	}
	return l
}

// errWalkLimit stops the walk at WrittenLimits.Files.
var errWalkLimit = errors.New("file limit")

// Written scans dir, one scan per directory at a time: a walk on a hung mount is abandoned with
// ctx and the next caller waits for it rather than starting another.
func (g *Guard) Written(ctx context.Context, dir string, lim WrittenLimits) (Written, error) {
	v, err := g.do(ctx, "written\x00"+dir, func() (any, error) { return ScanWritten(ctx, dir, lim) })
	if err != nil {
		return Written{Dir: dir}, err
	}
	return v.(Written), nil
}

// ScanWritten walks dir within lim and reads the headers of the newest safetensors files.
func ScanWritten(ctx context.Context, dir string, lim WrittenLimits) (Written, error) {
	lim = lim.withDefaults()
	w := Written{Dir: dir}
	type st struct {
		path string
		size int64
		mod  time.Time
	}
	var tensors []st
	base := strings.Count(filepath.Clean(dir), string(filepath.Separator))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil // a file that went away mid-walk, a directory we may not read
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if d.IsDir() {
			if strings.Count(filepath.Clean(path), string(filepath.Separator))-base >= lim.Depth {
				w.Truncated = true
				if w.Cut == "" {
					w.Cut = fmt.Sprintf("directories over %d levels deep not read", lim.Depth)
					if lim.Depth == 1 {
						w.Cut = "directories below the top not read"
					}
				}
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if w.Files >= lim.Files {
			w.Truncated = true
			w.Cut = fmt.Sprintf("at the %s-file limit", humanize.Comma(int64(lim.Files)))
			return errWalkLimit
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		w.Files++
		w.Bytes += info.Size()
		if info.ModTime().After(w.Newest) {
			w.Newest = info.ModTime()
		}
		if strings.HasSuffix(d.Name(), ".safetensors") {
			w.Safetensors++
			w.SafetensorsBytes += info.Size()
			tensors = append(tensors, st{path, info.Size(), info.ModTime()})
		}
		return nil
	})
	if err != nil && !errors.Is(err, errWalkLimit) {
		return w, fmt.Errorf("scan %s: %w", dir, err)
	}
	// The newest files say what the job writes now; a file still being written has no header yet
	// or a short body, so it is skipped by the header read failing or holding no tokens.
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].mod.After(tensors[j].mod) })
	var readBytes int64
	var readTokens float64
	for _, t := range tensors {
		if w.HeadersRead >= lim.Headers {
			break
		}
		if ctx.Err() != nil {
			return w, fmt.Errorf("scan %s: %w", dir, ctx.Err())
		}
		tokens, err := safetensorsTokens(t.path)
		if err != nil || tokens <= 0 {
			continue
		}
		w.HeadersRead++
		readBytes += t.size
		readTokens += tokens
	}
	if readBytes > 0 {
		w.TokensInFiles = readTokens * float64(w.SafetensorsBytes) / float64(readBytes)
	}
	return w, nil
}

// safetensorsMaxHeader bounds the JSON header read from a file (the format caps it at 100 MB;
// hidden-state files with a handful of tensors have headers of a few hundred bytes).
const safetensorsMaxHeader = 1 << 20

// safetensorsTokens reads a safetensors header and returns the sequence length it stores: the
// element count of an input_ids tensor, else the second-to-last dimension of a hidden-states
// tensor ([seq, hidden] or [layers, seq, hidden]). 0 when neither is there.
func safetensorsTokens(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h, err := readSafetensorsHeader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return safetensorsSeqLen(h), nil
}

// safetensorsTensor is one entry of a safetensors header.
type safetensorsTensor struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// readSafetensorsHeader parses the 8-byte little-endian header length and the JSON that follows.
func readSafetensorsHeader(r io.Reader) (map[string]safetensorsTensor, error) {
	var n uint64
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("read safetensors header length: %w", err)
	}
	if n == 0 || n > safetensorsMaxHeader {
		return nil, fmt.Errorf("safetensors header of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read safetensors header: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(buf, &raw); err != nil {
		return nil, fmt.Errorf("parse safetensors header: %w", err)
	}
	out := map[string]safetensorsTensor{}
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var t safetensorsTensor
		if err := json.Unmarshal(msg, &t); err != nil {
			return nil, fmt.Errorf("parse safetensors tensor %q: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

func safetensorsSeqLen(h map[string]safetensorsTensor) float64 {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, "input_ids") {
			elems := int64(1)
			for _, d := range h[n].Shape {
				elems *= d
			}
			return float64(elems)
		}
	}
	for _, n := range names {
		if s := h[n].Shape; strings.Contains(n, "hidden") && len(s) >= 2 {
			return float64(s[len(s)-2])
		}
	}
	return 0
}

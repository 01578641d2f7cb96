package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// DefaultRunName is the name of the run in the built-in default configuration.
const DefaultRunName = "local"

// Default is the configuration used when no run file is found: one run that watches the working
// directory and the root filesystem.
func Default(workdir string) *File {
	return &File{
		Source: "built-in default",
		Runs: []Run{{
			Name:  DefaultRunName,
			Watch: []string{workdir, "/"},
		}},
	}
}

// Locate picks the run file: the flag, else $RUNWATCH_CONFIG, else ./runwatch.yaml if present.
// It returns "" when none applies, meaning the built-in default.
func Locate(flagPath, envPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if envPath != "" {
		return envPath, nil
	}
	if _, err := os.Stat("runwatch.yaml"); err == nil {
		return "runwatch.yaml", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("check runwatch.yaml: %w", err)
	}
	return "", nil
}

// RunByName returns the run with that name.
func (f *File) RunByName(name string) (*Run, bool) {
	for i := range f.Runs {
		if strings.EqualFold(f.Runs[i].Name, name) {
			return &f.Runs[i], true
		}
	}
	return nil, false
}

// DTypes maps the element types a plan may name to their size in bytes.
var DTypes = map[string]int{
	"float32": 4, "fp32": 4, "float": 4,
	"float16": 2, "fp16": 2, "half": 2, "bfloat16": 2, "bf16": 2,
	"float8": 1, "fp8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1, "uint8": 1,
	"float64": 8, "fp64": 8, "double": 8,
}

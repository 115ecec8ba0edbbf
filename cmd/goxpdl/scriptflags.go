package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/script"
)

// scriptFlagsUsage is the part of run's and serve's usage on the limits
// of conditions and scripts (engine.Config.ScriptLimits,
// ConditionTimeout, ScriptTimeout).
const scriptFlagsUsage = `	--script-memory SIZE  how far the heap may grow while one condition or
	                    script runs (default 64MiB; sizes as 512KiB, 8MB;
	                    off: no limit). Over it, the evaluation fails and
	                    its activity goes Abnormal, as for every limit here
	--script-depth N    how deeply a script's calls may nest (default 1024;
	                    off: no limit)
	--script-result SIZE  the largest value a script may hand back (default
	                    1MiB; off: no limit)
	--script-result-total SIZE  the most a script may hand back for all
	                    its variables together (default 4MiB; off: no limit)
	--condition-timeout D  the time limit of each condition and expression
	                    (default 1s)
	--script-timeout D  the time limit of each script task and script tool
	                    (default 5s)`

// scriptFlags are the flags of scriptFlagsUsage.
type scriptFlags struct {
	memory, result, total     sizeFlag
	depth                     depthFlag
	conditionTime, scriptTime time.Duration
}

// register defines the flags on fs.
func (f *scriptFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.memory, "script-memory", "SIZE or off")
	fs.Var(&f.result, "script-result", "SIZE or off")
	fs.Var(&f.total, "script-result-total", "SIZE or off")
	fs.Var(&f.depth, "script-depth", "N or off")
	fs.DurationVar(&f.conditionTime, "condition-timeout", 0, "time limit of a condition")
	fs.DurationVar(&f.scriptTime, "script-timeout", 0, "time limit of a script")
}

// check refuses what the flag package lets through.
func (f *scriptFlags) check() error {
	switch {
	case f.conditionTime < 0:
		return fmt.Errorf("--condition-timeout %v: want a positive duration", f.conditionTime)
	case f.scriptTime < 0:
		return fmt.Errorf("--script-timeout %v: want a positive duration", f.scriptTime)
	}
	return nil
}

// apply sets the limits given in cfg; those not given keep the engine's
// defaults.
func (f *scriptFlags) apply(cfg *engine.Config) {
	cfg.ScriptLimits = script.Limits{MemoryBudget: int64(f.memory), MaxCallStackDepth: int(f.depth), MaxResultBytes: int64(f.result),
		MaxResultTotalBytes: int64(f.total)}
	cfg.ConditionTimeout, cfg.ScriptTimeout = f.conditionTime, f.scriptTime
}

// errOff explains the values a limit flag takes.
var errOff = errors.New(`want a positive number or "off"`)

// sizeFlag is a size in bytes ("64MiB", "8MB", "4096"), or "off" (-1);
// zero when not given.
type sizeFlag int64

func (s *sizeFlag) String() string {
	if *s < 0 {
		return "off"
	}
	return strconv.FormatInt(int64(*s), 10)
}

func (s *sizeFlag) Set(v string) error {
	if v == "off" {
		*s = -1
		return nil
	}
	n, err := humanize.ParseBytes(v)
	if err != nil || n == 0 || n > 1<<62 {
		return errOff
	}
	*s = sizeFlag(n)
	return nil
}

// depthFlag is a call depth, or "off" (-1); zero when not given.
type depthFlag int

func (d *depthFlag) String() string {
	if *d < 0 {
		return "off"
	}
	return strconv.Itoa(int(*d))
}

func (d *depthFlag) Set(v string) error {
	if v == "off" {
		*d = -1
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return errOff
	}
	*d = depthFlag(n)
	return nil
}

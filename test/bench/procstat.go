//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat: 100 on every Linux architecture Go supports.
const clockTicks = 100

// procUsage is what /proc says of a process at one moment.
type procUsage struct {
	// RSS and HWM (peak RSS so far) in bytes: VmRSS and VmHWM.
	RSS, HWM uint64
	// CPUSeconds is user plus system time.
	CPUSeconds float64
}

// readProcUsage reads /proc/<pid>/status and /proc/<pid>/stat.
func readProcUsage(pid int) (procUsage, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procUsage{}, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procUsage{}, err
	}
	var u procUsage
	if u.RSS, u.HWM, err = parseStatusMemory(status); err != nil {
		return procUsage{}, err
	}
	if u.CPUSeconds, err = parseStatCPU(stat); err != nil {
		return procUsage{}, err
	}
	return u, nil
}

// parseStatusMemory reads VmRSS and VmHWM, in bytes, from the contents of
// /proc/<pid>/status (lines like "VmRSS:	  123456 kB").
func parseStatusMemory(status []byte) (rss, hwm uint64, err error) {
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected /proc status line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s: %w", key, err)
		}
		if key == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("no VmRSS and VmHWM in /proc status")
	}
	return rss, hwm, nil
}

// parseStatCPU returns utime+stime, in seconds, from the contents of
// /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat")
	}
	// After ")": field 3 (state) onwards; utime and stime are fields 14
	// and 15, so indexes 11 and 12 here.
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc stat: %d fields after the command", len(fields))
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc stat times: %w", err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

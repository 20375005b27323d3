package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// runBigLog is `go run ./test/perf biglog`: issue 11's large-log figures
// on one samsa broker (durable default). It fills a topic of 6 partitions
// with -gib GiB of 1 KiB records, then alternates timed produce runs to a
// fresh topic and to the large one (-rounds each, medians and their
// ratio), then kills the broker with SIGKILL, starts it again on the same
// data and ports, and reports how long it took until the broker answered
// metadata and until a produce to the large topic was acknowledged.
func runBigLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("perf biglog", flag.ContinueOnError)
	fset.SetOutput(stderr)
	gib := fset.Int("gib", 20, "GiB of 1 KiB records in the large topic")
	rounds := fset.Int("rounds", 2, "produce runs to each topic, alternating")
	duration := fset.Duration("duration", 10*time.Second, "length of each timed produce run")
	warmup := fset.Duration("warmup", 2*time.Second, "untimed start of each produce run")
	workDir := fset.String("dir", "", "working directory (default: a new temporary directory)")
	keep := fset.Bool("keep", false, "keep the working directory (data and broker log) afterwards")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if fset.NArg() > 0 || *gib < 1 || *rounds < 1 || *duration <= 0 || *warmup < 0 {
		return errors.New("usage: perf biglog [-gib N>=1] [-rounds N>=1] [-duration D>0] [-warmup D] [-dir DIR] [-keep]")
	}
	if *workDir == "" {
		d, err := os.MkdirTemp("", "samsa-perf-biglog-")
		if err != nil {
			return err
		}
		*workDir = d
		if !*keep {
			defer os.RemoveAll(d)
		}
	}
	bin, err := buildSamsa(ctx, *workDir, stderr)
	if err != nil {
		return err
	}
	env := &environment{samsa: bin, dir: *workDir, log: stderr}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	dir := filepath.Join(*workDir, "broker")
	live, err := startSamsaAt(ctx, bin, dir, ports)
	if err != nil {
		return err
	}
	defer func() { live.stop() }()
	bench := func(args ...string) (benchReport, error) {
		return env.bench(ctx, append(args, "--bootstrap-server", live.bootstrap, "--json", "--progress", "0"))
	}

	records := int64(*gib) << 20
	fmt.Fprintf(stderr, "filling topic big with %d GiB\n", *gib)
	fill, err := bench("produce", "--topic", "big", "--partitions", "6", "--record-size", "1024",
		"--num-records", strconv.FormatInt(records, 10), "--timeout", "2m")
	if err != nil {
		return fmt.Errorf("filling: %w", err)
	}
	size, err := dirSize(filepath.Join(dir, "data-1", "logs"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "filled: %.1f GiB of logs, %.0f MB/s\n", float64(size)/(1<<30), fill.MBPerSec)

	var small, big []float64
	timed := []string{"--record-size", "1024", "--duration", duration.String(), "--warmup", warmup.String()}
	for r := 1; r <= *rounds; r++ {
		s, err := bench(append([]string{"produce", "--topic", fmt.Sprintf("small-%d", r), "--partitions", "6"}, timed...)...)
		if err != nil {
			return err
		}
		b, err := bench(append([]string{"produce", "--topic", "big"}, timed...)...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "round %d: produce 1 KiB to a new topic %.1f MB/s, to the large one %.1f MB/s\n", r, s.MBPerSec, b.MBPerSec)
		small, big = append(small, s.MBPerSec), append(big, b.MBPerSec)
	}
	ms, mb := median(small), median(big)
	fmt.Fprintf(stdout, "median: new topic %.1f MB/s, large topic %.1f MB/s: %.2f×\n", ms, mb, mb/ms)

	for _, p := range live.procs {
		p.cmd.Process.Kill()
		<-p.done
		p.log.Close()
	}
	start := time.Now()
	live, err = startSamsaAt(ctx, bin, dir, ports)
	if err != nil {
		return fmt.Errorf("restart after SIGKILL: %w", err)
	}
	ready := time.Since(start)
	for {
		_, err := bench("produce", "--topic", "big", "--record-size", "100", "--num-records", "1", "--timeout", "2s")
		if err == nil {
			break
		}
		if time.Since(start) > 2*time.Minute {
			return fmt.Errorf("no produce acknowledged within 2 minutes of the restart: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	fmt.Fprintf(stdout, "restart after SIGKILL with %.1f GiB of logs: metadata served after %v, first produce to the large topic acknowledged after %v\n",
		float64(size)/(1<<30), ready.Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
	return nil
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

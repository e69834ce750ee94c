package replicas

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The benchmark's load: benchClients client goroutines in all, each with its own connection to
// one replica (round-robin), so that 1, 2 and 3 replicas see the same offered load. Each op is
// server-side apply of one of benchObjects ConfigMaps (5 in 10), a get of one (4 in 10) or a
// list of the tenth of them sharing a label (1 in 10), as controllers do.
const (
	benchClients = 12
	benchObjects = 300
	benchGroups  = 10
)

// noFsyncEnv names the variable that turns the benchmark's etcd fsync off.
const noFsyncEnv = "LAPIS_BENCH_NOFSYNC"

type opKind int

const (
	opApply opKind = iota
	opGet
	opList
	opKinds
)

var opNames = [opKinds]string{"apply", "get", "list"}

// BenchmarkReplicas measures throughput and latency of 1, 2 and 3 lapis replicas on one
// 3-member etcd cluster (fsync on, as deployed), and where the CPU goes: each lapis process's
// and, split by pprof labels, the test process's etcd members' and clients'. On one machine
// every process shares its cores, so the figures show the setup's cost, not a speed-up:
//
//	go test ./test/replicas -run '^$' -bench Replicas -benchtime 20s -count 1
//
// With LAPIS_BENCH_NOFSYNC=1 the members do not sync their logs, to measure what fsync costs.
func BenchmarkReplicas(b *testing.B) {
	etcd := startCluster(b, 3, os.Getenv(noFsyncEnv) != "1")
	for n := 1; n <= 3; n++ {
		b.Run(fmt.Sprintf("replicas-%d", n), func(b *testing.B) { benchReplicas(b, etcd, n) })
	}
}

// benchOp is one op's outcome.
type benchOp struct {
	kind opKind
	took time.Duration
}

func benchReplicas(b *testing.B, etcd *cluster, n int) {
	replicas := startReplicas(b, etcd.clientURLs, n)
	ns, clients := prepareBench(b, replicas, n)

	var pids []int
	for _, r := range replicas {
		pids = append(pids, r.proc.Process().Pid)
	}
	before, err := takeUsage(pids)
	if err != nil {
		b.Fatal(err)
	}
	prof := startLabelProfile()
	done, elapsed, errs := runBenchLoad(b, ns, clients, replicas)
	split := prof.stop()
	after, err := takeUsage(pids)
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range errs {
		b.Error(err)
	}
	reportBench(b, done, elapsed, after.minus(before), split, n)
}

// prepareBench makes the benchmark's namespace and its clients, spread over the replicas, each
// with a connection of its own, and has them apply every object before the clock starts.
func prepareBench(b *testing.B, replicas []*replica, n int) (string, []kubernetes.Interface) {
	ctx := b.Context()
	ns := fmt.Sprintf("bench-%d", n)
	if _, err := replicas[0].client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	clients := make([]kubernetes.Interface, benchClients)
	for g := range clients {
		cfg := rest.CopyConfig(replicas[g%n].config)
		cfg.Dial = (&net.Dialer{}).DialContext // a connection of its own: client-go shares transports otherwise
		clients[g] = kubernetes.NewForConfigOrDie(cfg)
	}
	// Every object exists before the clock starts, and every connection is open.
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			for i := g; i < benchObjects; i += benchClients {
				if _, err := benchDo(ctx, clients[g], ns, opApply, i, 0); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return ns, clients
}

// runBenchLoad has the clients do b.N ops (5 in 10 applies, 4 gets, 1 list) and returns the
// ops each client completed, the time they took and the first errors (one per client at most).
func runBenchLoad(b *testing.B, ns string, clients []kubernetes.Interface, replicas []*replica) (done [][]benchOp, elapsed time.Duration, errs []error) {
	ctx := b.Context()
	work := make(chan int)
	done = make([][]benchOp, benchClients)
	errCh := make(chan error, benchClients)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go pprof.Do(ctx, pprof.Labels("clients", "load"), func(ctx context.Context) {
			defer wg.Done()
			for k := range work {
				kind := opApply
				switch m := k % 10; {
				case m >= 9:
					kind = opList
				case m >= 5:
					kind = opGet
				}
				took, err := benchDo(ctx, clients[g], ns, kind, k*7919%benchObjects, k)
				if err != nil {
					select {
					case errCh <- fmt.Errorf("%s through %s: %w", opNames[kind], replicas[g%len(replicas)].name, err):
					default:
					}
					continue
				}
				done[g] = append(done[g], benchOp{kind, took})
			}
		})
	}
	start := time.Now()
	for k := 0; b.Loop(); k++ {
		work <- k
	}
	close(work)
	wg.Wait()
	elapsed = time.Since(start)
	close(errCh)
	for err := range errCh {
		errs = append(errs, err)
	}
	return done, elapsed, errs
}

// reportBench reports the ops' rate and latencies, and the CPU they took (u, with split, the
// profile's apportioning of the test process's share) per op.
func reportBench(b *testing.B, done [][]benchOp, elapsed time.Duration, u usage, split map[string]time.Duration, n int) {
	var all []time.Duration
	var byKind [opKinds][]time.Duration
	for _, ops := range done {
		for _, op := range ops {
			all = append(all, op.took)
			byKind[op.kind] = append(byKind[op.kind], op.took)
		}
	}
	ops := float64(len(all))
	if ops == 0 {
		b.Fatal("no op succeeded")
	}
	b.ReportMetric(ops/elapsed.Seconds(), "ops/s")
	b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
	for kind, took := range byKind {
		b.ReportMetric(ms(percentile(took, 0.99)), opNames[kind]+"-p99-ms")
	}
	perOp := func(d time.Duration) float64 { return ms(d) / ops }
	b.ReportMetric(perOp(u.lapis), "lapis-cpu-ms/op")
	self := fmt.Sprintf("test process %.2f", perOp(u.self))
	if split != nil {
		// The profile's samples apportion the test process's CPU time, which /proc counts in full.
		var sampled time.Duration
		for _, d := range split {
			sampled += d
		}
		share := func(label string) time.Duration {
			return time.Duration(float64(u.self) * float64(split[label]) / float64(sampled))
		}
		b.ReportMetric(perOp(share("etcd")), "etcd-cpu-ms/op")
		b.ReportMetric(perOp(share("clients")), "client-cpu-ms/op")
		self += fmt.Sprintf(" (etcd %.2f, clients %.2f, runtime and GC %.2f)", perOp(share("etcd")), perOp(share("clients")), perOp(share("")))
	}
	b.ReportMetric((u.lapis+u.self).Seconds()/elapsed.Seconds(), "cores")
	b.ReportMetric(u.machine.Seconds()/elapsed.Seconds(), "machine-cores")
	b.ReportMetric(perOp(u.fsync), "fsync-ms/op")
	b.Logf("%d ops in %v through %d replicas: %.0f ops/s; CPU ms/op: lapis %s, %s; etcd WAL fsyncs %.2f/op taking %.2f ms/op, backend commits %.2f ms/op; cores busy: %.2f with these processes, %.2f with every process on the machine (%d cores; iowait %.2f)",
		len(all), elapsed.Round(time.Millisecond), n, ops/elapsed.Seconds(), u.lapisEach(ops), self,
		float64(u.fsyncs)/ops, perOp(u.fsync), perOp(u.commit), (u.lapis+u.self).Seconds()/elapsed.Seconds(),
		u.machine.Seconds()/elapsed.Seconds(), runtime.NumCPU(), u.iowait.Seconds()/elapsed.Seconds())
}

// benchDo runs one op on object i; v is the value an apply writes.
func benchDo(ctx context.Context, c kubernetes.Interface, ns string, kind opKind, i, v int) (time.Duration, error) {
	cms := c.CoreV1().ConfigMaps(ns)
	name := fmt.Sprintf("cm-%d", i)
	start := time.Now()
	var err error
	switch kind {
	case opApply:
		body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "labels": map[string]string{"group": strconv.Itoa(i % benchGroups)}},
			"data":     map[string]string{"v": strconv.Itoa(v)}})
		_, err = cms.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "bench", Force: ptrTo(true)})
	case opGet:
		_, err = cms.Get(ctx, name, metav1.GetOptions{})
	case opList:
		var list *corev1.ConfigMapList
		if list, err = cms.List(ctx, metav1.ListOptions{LabelSelector: "group=" + strconv.Itoa(i%benchGroups)}); err == nil && len(list.Items) != benchObjects/benchGroups {
			err = fmt.Errorf("list of group %d: %d items; want %d", i%benchGroups, len(list.Items), benchObjects/benchGroups)
		}
	}
	return time.Since(start), err
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[min(len(d)-1, int(p*float64(len(d))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// usage is CPU time used so far: by each lapis process, by this test process (etcd members
// and clients), and etcd's WAL fsyncs and backend commits (its metrics, all members summed).
// It also holds the machine's busy and iowait CPU time (/proc/stat), all processes', so that
// a run shows how much of the cores others took.
type usage struct {
	each            []time.Duration
	lapis, self     time.Duration
	fsync, commit   time.Duration
	fsyncs          uint64
	machine, iowait time.Duration
}

func takeUsage(pids []int) (usage, error) {
	var u usage
	for _, pid := range pids {
		d, err := processCPU(strconv.Itoa(pid))
		if err != nil {
			return u, err
		}
		u.each = append(u.each, d)
		u.lapis += d
	}
	var err error
	if u.self, err = processCPU("self"); err != nil {
		return u, err
	}
	if u.machine, u.iowait, err = machineCPU(); err != nil {
		return u, err
	}
	u.fsync, u.fsyncs, err = histogramSum("etcd_disk_wal_fsync_duration_seconds")
	if err != nil {
		return u, err
	}
	u.commit, _, err = histogramSum("etcd_disk_backend_commit_duration_seconds")
	return u, err
}

func (u usage) minus(v usage) usage {
	d := usage{lapis: u.lapis - v.lapis, self: u.self - v.self, fsync: u.fsync - v.fsync, commit: u.commit - v.commit, fsyncs: u.fsyncs - v.fsyncs,
		machine: u.machine - v.machine, iowait: u.iowait - v.iowait}
	for i := range u.each {
		d.each = append(d.each, u.each[i]-v.each[i])
	}
	return d
}

// lapisEach is the lapis processes' CPU ms per op, and each one's when there are several.
func (u usage) lapisEach(ops float64) string {
	s := fmt.Sprintf("%.2f", ms(u.lapis)/ops)
	if len(u.each) > 1 {
		var each []string
		for _, d := range u.each {
			each = append(each, fmt.Sprintf("%.2f", ms(d)/ops))
		}
		s += " (" + strings.Join(each, " + ") + ")"
	}
	return s
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux lapis targets.
const clockTick = 10 * time.Millisecond

// processCPU is the user and system CPU time process pid ("self" for this one) has used.
func processCPU(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// machineCPU is the CPU time all processes have used (user, nice, system, irq, softirq,
// steal: all but idle and iowait) and the time spent waiting for I/O, from /proc/stat.
func machineCPU() (busy, iowait time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseProcStat(string(b))
}

func parseProcStat(stat string) (busy, iowait time.Duration, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: first line %q", line)
	}
	for i, s := range f[1:9] { // user nice system idle iowait irq softirq steal
		t, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		switch i {
		case 3:
		case 4:
			iowait = time.Duration(t) * clockTick
		default:
			busy += time.Duration(t) * clockTick
		}
	}
	return busy, iowait, nil
}

// parseStatCPU reads utime and stime, fields 14 and 15 of /proc/PID/stat; the command name
// before them, in parentheses, may hold spaces.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat %q: too few fields", stat)
	}
	var total time.Duration
	for _, s := range f[11:13] {
		t, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		total += time.Duration(t) * clockTick
	}
	return total, nil
}

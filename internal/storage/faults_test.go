package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestTranslate(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want error // nil: returned as it is
	}{
		{"compacted", rpctypes.ErrCompacted, ErrCompacted},
		{"future revision", rpctypes.ErrFutureRev, ErrFutureRevision},
		{"etcd quota", rpctypes.ErrNoSpace, ErrNoSpace},
		{"etcd quota as gRPC status", rpctypes.ErrGRPCNoSpace, ErrNoSpace},
		{"our deadline", context.DeadlineExceeded, ErrTimeout},
		{"wrapped deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), ErrTimeout},
		{"etcd request timeout", rpctypes.ErrTimeout, ErrTimeout},
		{"etcd timeout, leader failed", rpctypes.ErrTimeoutDueToLeaderFail, ErrTimeout},
		{"etcd timeout, connection lost", rpctypes.ErrTimeoutDueToConnectionLost, ErrTimeout},
		{"gRPC deadline", status.Error(codes.DeadlineExceeded, "deadline"), ErrTimeout},
		{"no leader", rpctypes.ErrNoLeader, ErrUnavailable},
		{"server stopped", rpctypes.ErrStopped, ErrUnavailable},
		{"too many requests", rpctypes.ErrTooManyRequests, ErrUnavailable},
		{"connection reset", status.Error(codes.Unavailable, "read tcp: connection reset by peer"), ErrUnavailable},
		{"transport closing", status.Error(codes.Unavailable, "transport is closing"), ErrUnavailable},
		{"canceled by the client", context.Canceled, nil},
		{"too large", rpctypes.ErrRequestTooLarge, ErrTooLarge},
		{"too large as gRPC status", rpctypes.ErrGRPCRequestTooLarge, ErrTooLarge},
		{"gRPC message over the limit", status.Error(codes.ResourceExhausted, "trying to send message larger than max (5000000 vs. 4194304)"), ErrTooLarge},
		{"other", errors.New("boom"), nil},
	} {
		got := translate(c.err)
		kinds := []error{ErrCompacted, ErrFutureRevision, ErrNoSpace, ErrTimeout, ErrUnavailable, ErrTooLarge}
		for _, k := range kinds {
			if errors.Is(got, k) != (k == c.want) {
				t.Errorf("%s: translate(%v) = %v; is %v: %v", c.name, c.err, got, k, errors.Is(got, k))
			}
		}
		if c.want == nil && got != c.err {
			t.Errorf("%s: translate(%v) = %v, want it unchanged", c.name, c.err, got)
		}
		if c.want != nil && !strings.Contains(got.Error(), strings.TrimPrefix(status.Convert(c.err).Message(), "etcdserver: ")) {
			t.Errorf("%s: %q lost etcd's message", c.name, got)
		}
	}
}

// fakeDisk is a guard's view of free space, changed by the test.
type fakeDisk struct {
	free uint64
	err  error
	now  time.Time
}

func newTestGuard(d *fakeDisk, log *slog.Logger, walBlocked bool) *spaceGuard {
	return &spaceGuard{dir: "/data/etcd", reserve: 100, log: log, walBlocked: walBlocked,
		free: func(string) (uint64, error) { return d.free, d.err }, now: func() time.Time { return d.now }}
}

func TestSpaceGuard(t *testing.T) {
	type step struct {
		after   time.Duration // since the previous step
		free    uint64
		statErr error
		refused bool
		logs    string // what this step adds to the log ("" nothing)
	}
	for _, c := range []struct {
		name       string
		walBlocked bool
		steps      []step
	}{
		{"room", false, []step{{0, 1000, nil, false, ""}, {time.Second, 100, nil, false, ""}}},
		{"full, then room again", false, []step{
			{0, 99, nil, true, "disk nearly full: refusing writes"},
			{time.Second, 10, nil, true, ""}, // said once
			{time.Second, 500, nil, false, "disk space available again"},
			{time.Second, 600, nil, false, ""},
			{time.Second, 0, nil, true, "disk nearly full"},
		}},
		{"a look is trusted briefly", false, []step{
			{0, 1000, nil, false, ""},
			{spaceCheckInterval / 2, 0, nil, false, ""},
			{spaceCheckInterval, 0, nil, true, "disk nearly full"},
			{spaceCheckInterval / 2, 1000, nil, true, ""},
			{spaceCheckInterval, 1000, nil, false, "available again"},
		}},
		{"free space unknown: writes go ahead", false, []step{{0, 0, errors.New("statfs: EIO"), false, ""}}},
		{"etcd started without room for its WAL: refused until restarted", true, []step{
			{0, 1 << 40, nil, true, "refusing writes until lapis is restarted"},
			{time.Second, 1 << 40, nil, true, ""},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			d := &fakeDisk{now: time.Unix(1000, 0)}
			g := newTestGuard(d, slog.New(slog.NewTextHandler(&log, nil)), c.walBlocked)
			for i, s := range c.steps {
				d.now, d.free, d.err = d.now.Add(s.after), s.free, s.statErr
				before := log.Len()
				err := g.check()
				if (err != nil) != s.refused || (err != nil && !errors.Is(err, ErrNoSpace)) {
					t.Errorf("step %d (free %d): %v, refused want %v", i, s.free, err, s.refused)
				}
				added := log.String()[before:]
				if (s.logs == "") != (added == "") || !strings.Contains(added, s.logs) {
					t.Errorf("step %d: logged %q, want %q", i, added, s.logs)
				}
			}
		})
	}
	if err := (*spaceGuard)(nil).check(); err != nil {
		t.Errorf("no guard: %v", err)
	}
}

// TestStoreRefusesWritesWhenDiskFull: every write of a Store whose disk is nearly full fails
// with ErrNoSpace before reaching etcd; reads go on; creating what exists still says so.
func TestStoreRefusesWritesWhenDiskFull(t *testing.T) {
	ctx := context.Background()
	b, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := NewStore(b.Client)
	rev, err := s.Create(ctx, "/k/present", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDisk{free: 0, now: time.Unix(1000, 0)}
	s.space = newTestGuard(d, slog.New(slog.DiscardHandler), false)

	writes := map[string]func() error{
		"create":         func() error { _, err := s.Create(ctx, "/k/new", []byte("v")); return err },
		"update":         func() error { _, _, err := s.Update(ctx, "/k/present", []byte("w"), rev); return err },
		"delete":         func() error { _, _, err := s.Delete(ctx, "/k/present", 0); return err },
		"compact":        func() error { return s.Compact(ctx, rev) },
		"create present": func() error { _, err := s.Create(ctx, "/k/present", []byte("v")); return err },
	}
	for name, write := range writes {
		err := write()
		want := ErrNoSpace
		if name == "create present" {
			want = ErrExists
		}
		if !errors.Is(err, want) {
			t.Errorf("%s on a full disk: %v, want %v", name, err, want)
		}
	}
	if kv, _, err := s.Get(ctx, "/k/present", 0); err != nil || string(kv.Value) != "v" {
		t.Errorf("get on a full disk: %q %v", kv.Value, err)
	}
	if l, err := s.List(ctx, "/k/", ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("list on a full disk: %+v %v", l, err)
	}
	if r, err := s.Revision(ctx); err != nil || r != rev {
		t.Errorf("revision on a full disk: %d %v, want %d (nothing written)", r, err, rev)
	}

	d.free, d.now = 1<<40, d.now.Add(time.Second)
	if _, err := s.Create(ctx, "/k/new", []byte("v")); err != nil {
		t.Errorf("create with room again: %v", err)
	}
}

// TestStoreCallsAreBounded: a call without a deadline gets one, so an etcd that never answers
// costs a bounded time and reports 503/504 kinds, not a hang.
func TestStoreCallsAreBounded(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline time.Duration // of the caller's context; 0: none
		limit    time.Duration
		want     time.Duration
	}{
		{"no deadline", 0, callTimeout, callTimeout},
		{"a later deadline", time.Hour, callTimeout, callTimeout},
		{"an earlier deadline", time.Second, callTimeout, time.Second},
		{"whole lists", 0, listTimeout, listTimeout},
	} {
		ctx := context.Background()
		if c.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.deadline)
			defer cancel()
		}
		bctx, cancel := bounded(ctx, c.limit)
		dl, ok := bctx.Deadline()
		cancel()
		if got := time.Until(dl); !ok || got > c.want || got < c.want-time.Second {
			t.Errorf("%s: deadline in %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFatalMessage(t *testing.T) {
	enospc := fmt.Errorf("write /data/etcd/member/snap/db: %w", syscall.ENOSPC)
	for _, c := range []struct {
		name   string
		fields []zapcore.Field
		want   string
	}{
		{"database write", []zapcore.Field{zap.Error(enospc)}, "disk holding lapis's data is full"},
		{"as etcd words it", []zapcore.Field{zap.Error(errors.New("no space left on device"))}, "disk holding lapis's data is full"},
		{"anything else", []zapcore.Field{zap.Error(errors.New("checksum mismatch"))}, "embedded etcd stopped (failed to read WAL): lapis cannot continue"},
		{"no error", nil, "embedded etcd stopped (failed to read WAL)"},
	} {
		if got := fatalMessage("failed to read WAL", c.fields); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.name, got, c.want)
		}
	}
}

func TestEtcdLogQuiet(t *testing.T) {
	for _, c := range []struct {
		name   string
		msg    string
		err    error
		logged bool
	}{
		{"benign at first start", "failed to update storage version", errors.New("cannot detect storage schema version: missing term information"), false},
		{"other storage version failure", "failed to update storage version", errors.New("bbolt: tx closed"), true},
		{"other error", "failed to commit tx", errors.New("missing term information"), true},
	} {
		var out bytes.Buffer
		core := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zapcore.ErrorLevel)
		zap.New(quietCore{core}).Error(c.msg, zap.Error(c.err))
		if got := out.Len() > 0; got != c.logged {
			t.Errorf("%s: logged %v (%q), want %v", c.name, got, out.String(), c.logged)
		}
	}
}

package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogger is the embedded etcd's logger: its errors, and above all the fatal ones it exits on
// (a WAL or database write that failed, e.g. on a full disk), must reach lapis's log, not vanish.
func etcdLogger() *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "time"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), zapcore.ErrorLevel)
	return zap.New(quietCore{core}, zap.WithFatalHook(explainFatal{})).Named("etcd")
}

// quietCore drops the one error a new etcd logs at every first start and mends by itself: it
// cannot record its storage version before a raft term is stored, and tries again later.
type quietCore struct{ zapcore.Core }

func (c quietCore) With(fields []zapcore.Field) zapcore.Core { return quietCore{c.Core.With(fields)} }

func (c quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c quietCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Message == "failed to update storage version" {
		for _, f := range fields {
			if err, ok := f.Interface.(error); ok && strings.Contains(err.Error(), "missing term information") {
				return nil
			}
		}
	}
	return c.Core.Write(e, fields)
}

// explainFatal ends lapis after etcd logged a fatal error, as zap would, saying first what it
// means for lapis.
type explainFatal struct{}

func (explainFatal) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	fmt.Fprintln(os.Stderr, fatalMessage(ce.Message, fields))
	os.Exit(1)
}

func fatalMessage(msg string, fields []zapcore.Field) string {
	for _, f := range fields {
		err, ok := f.Interface.(error)
		if ok && (errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), syscall.ENOSPC.Error())) {
			return "lapis: the embedded etcd stopped because the disk holding lapis's data is full (no space left on device): free space on it and start lapis again"
		}
	}
	return fmt.Sprintf("lapis: the embedded etcd stopped (%s): lapis cannot continue", msg)
}

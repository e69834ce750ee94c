package storage

import (
	"os"

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
	return zap.New(core).Named("etcd")
}

package samplereference

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
)

// Version is the k8s.io/sample-apiserver release the aggregation tests run: the one published
// with kube-apiserver kubereference.Version.
const Version = "v0.37.2"

// Binary is where BuildScript puts the sample-apiserver.
func Binary() string { return filepath.Join(kubereference.BinDir(), "sample-apiserver") }

// BuildScript is test/aggregation/build-sample-apiserver.sh in this repository.
func BuildScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "test", "aggregation", "build-sample-apiserver.sh")
}

// Built returns "" when the sample-apiserver is built and etcd is installed, else why a test
// that needs them skips.
func Built() string {
	if _, err := os.Stat(Binary()); err != nil {
		return fmt.Sprintf("sample-apiserver %s is not built (%v); %s builds it once", Version, err, BuildScript())
	}
	return kubereference.EtcdInstalled()
}

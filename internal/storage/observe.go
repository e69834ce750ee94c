package storage

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// revisionProbeKey is the key Store.Revision reads the store's revision with.
const revisionProbeKey = "/lapis-revision-probe"

// RequestObserver is told of every etcd request a Backend's client makes: the operation as
// kube-apiserver's etcd metrics name it (get, list, create, update, delete,
// getCurrentResourceVersion), its key, when it started and how it ended.
type RequestObserver func(operation, key string, start time.Time, err error)

// ObserveRequests tells observe of every etcd read and write from now on (for /metrics).
func (b *Backend) ObserveRequests(observe RequestObserver) {
	if kv, ok := b.Client.KV.(*observedKV); ok {
		kv.observe.Store(&observe)
	}
}

// observed wraps c's KV so that ObserveRequests can watch it; done before c is used, since
// the client's KV field is not guarded.
func observed(c *clientv3.Client) *clientv3.Client {
	c.KV = &observedKV{KV: c.KV}
	return c
}

// observedKV is a KV telling an observer, once there is one, of each request.
type observedKV struct {
	clientv3.KV
	observe atomic.Pointer[RequestObserver]
}

func (kv *observedKV) report(operation, key string, start time.Time, err error) {
	if o := kv.observe.Load(); o != nil {
		(*o)(operation, key, start, err)
	}
}

func (kv *observedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	start := time.Now()
	resp, err := kv.KV.Get(ctx, key, opts...)
	op := clientv3.OpGet(key, opts...)
	operation := "get"
	switch {
	case key == revisionProbeKey:
		operation = "getCurrentResourceVersion"
	case len(op.RangeBytes()) > 0:
		operation = "list"
	}
	kv.report(operation, key, start, err)
	return resp, err
}

func (kv *observedKV) Txn(ctx context.Context) clientv3.Txn {
	return &observedTxn{Txn: kv.KV.Txn(ctx), kv: kv}
}

// observedTxn names a transaction by what it does as lapis writes them: a put if absent is a
// create, another put an update, a delete a delete.
type observedTxn struct {
	clientv3.Txn
	kv        *observedKV
	ifAbsent  bool
	operation string
	key       string
}

func (t *observedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	for _, c := range cs {
		if pc := c.GetCompare(); pc.Target == pb.Compare_CREATE && pc.Result == pb.Compare_EQUAL {
			t.ifAbsent = true
		}
	}
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *observedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		switch {
		case op.IsPut() && t.ifAbsent:
			t.operation = "create"
		case op.IsPut():
			t.operation = "update"
		case op.IsDelete():
			t.operation = "delete"
		default:
			continue
		}
		t.key = string(op.KeyBytes())
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *observedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *observedTxn) Commit() (*clientv3.TxnResponse, error) {
	start := time.Now()
	resp, err := t.Txn.Commit()
	operation := t.operation
	if operation == "" {
		operation = "txn"
	}
	t.kv.report(operation, t.key, start, err)
	return resp, err
}

// DBSize is the space etcd's database file takes (etcd's status dbSize, kube's
// apiserver_storage_size_bytes): the embedded etcd's, or one member's of an external cluster.
func (b *Backend) DBSize(ctx context.Context) (int64, error) {
	if b.embedded != nil {
		return b.embedded.Server.Backend().Size(), nil
	}
	endpoints := b.Client.Endpoints()
	if len(endpoints) == 0 {
		return 0, errors.New("no etcd endpoints")
	}
	status, err := b.Client.Status(ctx, endpoints[rand.IntN(len(endpoints))])
	if err != nil {
		return 0, translate(err)
	}
	return status.DbSize, nil
}

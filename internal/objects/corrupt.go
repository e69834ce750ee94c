package objects

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
)

// Objects whose stored value cannot be read (corrupt, encrypted without the key, an unknown
// encoding) are answered as kube-apiserver 1.37 answers them: this is stored data, not a
// client's bad input, so kube's 500s are the right status. The rest is served as usual.

// corruptGetError is kube's answer to a read of one corrupt object: an internal error naming its
// key below the etcd prefix.
func (s *Service) corruptGetError(c *storage.CorruptError) error {
	return apierrors.NewInternalError(errors.New(c.StorageError("/" + strings.TrimPrefix(c.Key, s.keys.Root()))))
}

// readError is storageError for a read of one object, naming a corrupt one as kube does.
func (s *Service) readError(r *catalog.Resource, name string, err error) error {
	var corrupt *storage.CorruptError
	if errors.As(err, &corrupt) {
		return s.corruptGetError(corrupt)
	}
	return storageError(r, name, err)
}

// maxCorruptInList is how many corrupt objects kube names before it gives up on a list
// (etcd3's maxCorruptObjErrsToAggregate).
const maxCorruptInList = 100

// corruptObjects gathers the corrupt objects a list meets: kube fails the list, naming each.
type corruptObjects []*storage.CorruptError

// add records kv if it is corrupt, and reports whether it was.
func (c *corruptObjects) add(kv storage.KeyValue) bool {
	if kv.Corrupt == nil {
		return false
	}
	*c = append(*c, kv.Corrupt)
	return true
}

// full says the list has met as many as kube names: it stops there.
func (c corruptObjects) full() bool { return len(c) >= maxCorruptInList }

// err is kube's StorageReadError for the list, nil when nothing was corrupt
// (etcd3's aggregatedStorageError.NewAPIStatusError).
func (c corruptObjects) err(r *catalog.Resource) error {
	if len(c) == 0 {
		return nil
	}
	gr := qualifiedResource(r)
	causes := make([]metav1.StatusCause, 0, len(c)+1)
	for _, e := range c {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: e.Key, Message: e.Error()})
	}
	if c.full() {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany, Message: "too many errors, the list is truncated"})
	}
	message := fmt.Sprintf("failed to read one or more %s from the storage: %v", gr.String(), c[0])
	if len(c) > 1 {
		message = fmt.Sprintf("%s (and %d more)", message, len(c)-1)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonStoreReadError,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: "list", Causes: causes},
		Message: message,
	}}
}

package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the core types in legacyscheme
)

// TestResourceQuota: the chain ends with kube's ResourceQuota plugin, configured with kube's
// evaluators: a write a quota counts is refused while the quota has no status or no room,
// and charged to the quota's status.used otherwise.
func TestResourceQuota(t *testing.T) {
	quota := func(status *corev1.ResourceQuotaStatus) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				"count/configmaps": resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("1")}},
		}
		if status != nil {
			q.Status = *status
		}
		return q
	}
	used := func(configmaps, pods string) *corev1.ResourceQuotaStatus {
		return &corev1.ResourceQuotaStatus{Hard: quota(nil).Spec.Hard, Used: corev1.ResourceList{
			"count/configmaps": resource.MustParse(configmaps), corev1.ResourcePods: resource.MustParse(pods)}}
	}
	configMap := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: api.PodSpec{ServiceAccountName: "default", AutomountServiceAccountToken: new(bool),
			Containers: []api.Container{{Name: "c", Image: "x"}}}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}} // PodSecurity reads it
	tests := []struct {
		name     string
		quota    *corev1.ResourceQuota
		obj      runtime.Object
		resource string
		want     string // the error; "" admits
		wantUsed string // the configmaps the quota's status then counts
	}{
		// Without status.hard the quota is not yet in force: kube admits.
		{"no status yet", quota(nil), configMap, "configmaps", "", ""},
		// status.hard without status.used: kube refuses until the controller has counted.
		{"status unknown", quota(&corev1.ResourceQuotaStatus{Hard: quota(nil).Spec.Hard}), configMap, "configmaps",
			`configmaps "c" is forbidden: status unknown for quota: q, resources: count/configmaps`, ""},
		{"exceeded", quota(used("2", "0")), configMap, "configmaps",
			`configmaps "c" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2`, ""},
		{"room left: charged", quota(used("1", "0")), configMap, "configmaps", "", "2"},
		{"pods: kube's pod evaluator", quota(used("0", "1")), pod, "pods",
			`pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`, ""},
		{"another namespace", &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "other"},
			Spec: quota(nil).Spec}, configMap, "configmaps", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client := fake.NewSimpleClientset(tc.quota, account, namespace)
			factory := informers.NewSharedInformerFactory(client, 0)
			chain, err := New(testOptions(t, client, factory, ctx.Done()))
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())

			m, _ := tc.obj.(metav1.Object)
			gvk := api.SchemeGroupVersion.WithKind(map[string]string{"configmaps": "ConfigMap", "pods": "Pod"}[tc.resource])
			attrs := admission.NewAttributesRecord(tc.obj, nil, gvk, m.GetNamespace(), m.GetName(),
				api.SchemeGroupVersion.WithResource(tc.resource), "", admission.Create, &metav1.CreateOptions{}, false,
				&user.DefaultInfo{Name: "admin"})
			err = chain.(admission.ValidationInterface).Validate(ctx, attrs, admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme))
			if got := errString(err); got != tc.want {
				t.Fatalf("Validate: got %q, want %q", got, tc.want)
			}
			if tc.wantUsed == "" {
				return
			}
			got, err := client.CoreV1().ResourceQuotas(tc.quota.Namespace).Get(ctx, tc.quota.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := got.Status.Used["count/configmaps"]; n.String() != tc.wantUsed {
				t.Errorf("status.used count/configmaps = %s, want %s", n.String(), tc.wantUsed)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

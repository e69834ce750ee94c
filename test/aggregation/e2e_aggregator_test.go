/*
Copyright 2017 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package aggregation

// Origin: k8s.io/kubernetes v1.37.2, test/e2e/apimachinery/aggregator.go: the conformance spec
// "[sig-api-machinery] Aggregator Should be able to support the 1.17 Sample API Server using
// the current Aggregator [LinuxOnly]" (TestSampleAPIServer, SetUpSampleAPIServer and their
// helpers, and setupServerCert of certs.go), run by TestE2EAggregator against kube-apiserver
// and lapis in turn.
//
// Changed, and why (the API calls are otherwise the spec's, in its order, with its names):
//   - The sample-apiserver runs as a process (internal/testkit/samplereference) instead of a
//     Deployment of two containers (the sample-apiserver image and etcd): neither server runs
//     pods. "kubectl create -f deploy.yaml" becomes choosing the process's loopback port; the
//     Deployment's waits become starting the process with the Secret's certificate and waiting
//     for its /readyz (the pod's readiness probe), once the RBAC objects it needs exist (a pod
//     would be restarted until then). It runs with the token of the namespace's default
//     ServiceAccount, the pod's identity, in a kubeconfig (the pod's in-cluster configuration).
//   - The Service is an ExternalName Service naming localhost, with the process's port, and the
//     APIService names that port (the spec: a selector Service, port 7443 to the pod's 443): kube
//     refuses loopback EndpointSlice addresses, and without --enable-aggregator-routing both
//     servers proxy to an ExternalName Service's name at the APIService's port.
//   - The framework's namespace (aggregator-NNNNN, with its default ServiceAccount made by
//     kube-controller-manager) is created by the test, its default ServiceAccount too where no
//     controller makes it (kube-apiserver runs without kube-controller-manager here); RBAC is
//     always on, so e2eauth.IsRBACEnabled's branches are taken unconditionally.
//   - Pod listings and pod logs in debug output are the process's log instead; the
//     validateErrorWithDebugInfo's EndpointSlice listing is dropped (there are none). When the
//     wait for the flunders fails, the APIService last read, the error reading it and the last
//     answer to the GET are logged, so that a failure on lapis says what lapis answered (the
//     spec logs the last read's result, which a read cut short by the deadline empties).
//   - samplev1alpha1.FlunderList is decoded as an unstructured list, and the Flunder the
//     dynamic client creates is the map its JSON is (lapis does not depend on
//     k8s.io/sample-apiserver); the framework, ginkgo and gomega calls are testing.T's (the
//     shims of e2e_framework_test.go keep the spec's framework.ExpectNoError, Failf, Logf and
//     ginkgo.By lines as they were, and are passed to pollTimed and
//     checkApiServiceListQuantity; gomega expectations are if statements), and
//     cleanupSampleAPIServer takes the framework, to stop the process.
//   - The spec's image argument is gone (the binary is samplereference.Binary()), and
//     TestSampleAPIServer is testSampleAPIServer (go vet keeps Test names for tests). The
//     namespace's pod-security label (NamespacePodSecurityLevel) is not set: no pod is made.
//   - SetUpSampleAPIServer is split, its code unchanged but as said above: registerSampleAPIServer
//     (the objects and the process, which TestAggregation uses too) and createSampleRBAC (the
//     first IsRBACEnabled block); the final wait stays in SetUpSampleAPIServer. The functions
//     otherwise keep upstream's length, so that the copy reads against the original.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
	"k8s.io/utils/ptr"

	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
	"github.com/lapis-dev/lapis/internal/testkit/samplereference"
)

const (
	apiServiceRetryPeriod  = 1 * time.Second
	apiServiceRetryTimeout = 2 * time.Minute

	defaultApiServiceGroupName = "wardle.example.com" // samplev1alpha1.GroupName
	defaultApiServiceVersion   = "v1alpha1"
)

// TestE2EAggregator is the spec's ginkgo.Describe("Aggregator") with its BeforeEach, on kube
// (to show the copy is faithful) and on lapis.
func TestE2EAggregator(t *testing.T) {
	lapis, kube := servers(t)
	for _, s := range []*target{kube, lapis} {
		t.Run(s.name, func(t *testing.T) {
			ctx := t.Context()
			f := newE2EFramework(t, s, "aggregator-"+utilrand.String(5))
			aggrclient := s.aggregator
			apiServiceName := defaultApiServiceVersion + "." + defaultApiServiceGroupName
			t.Cleanup(func() {
				cleanupSampleAPIServer(context.Background(), f, aggrclient, generateSampleAPIServerObjectNames(f.Namespace.Name), apiServiceName)
			})
			// Testing a 1.17 version of the sample-apiserver
			testSampleAPIServer(ctx, f, aggrclient, defaultApiServiceGroupName, defaultApiServiceVersion)
		})
	}
}

func cleanupSampleAPIServer(ctx context.Context, f *e2eFramework, aggrclient *aggregatorclient.Clientset, n sampleAPIServerObjectNames, apiServiceName string) {
	client := f.ClientSet
	// delete the APIService first to avoid causing discovery errors
	_ = aggrclient.ApiregistrationV1().APIServices().Delete(ctx, apiServiceName, metav1.DeleteOptions{})

	f.stopSampleAPIServer() // the spec deletes sample-apiserver-deployment
	_ = client.CoreV1().Secrets(n.namespace).Delete(ctx, "sample-apiserver-secret", metav1.DeleteOptions{})
	_ = client.CoreV1().Services(n.namespace).Delete(ctx, "sample-api", metav1.DeleteOptions{})
	_ = client.CoreV1().ServiceAccounts(n.namespace).Delete(ctx, "sample-apiserver", metav1.DeleteOptions{})
	_ = client.RbacV1().RoleBindings("kube-system").Delete(ctx, n.roleBinding, metav1.DeleteOptions{})
	_ = client.RbacV1().ClusterRoleBindings().Delete(ctx, "wardler:"+n.namespace+":auth-delegator", metav1.DeleteOptions{})
	_ = client.RbacV1().ClusterRoles().Delete(ctx, n.clusterRole, metav1.DeleteOptions{})
	_ = client.RbacV1().ClusterRoleBindings().Delete(ctx, n.clusterRoleBinding, metav1.DeleteOptions{})
}

type sampleAPIServerObjectNames struct {
	namespace          string
	roleBinding        string
	clusterRole        string
	clusterRoleBinding string
}

func generateSampleAPIServerObjectNames(namespace string) sampleAPIServerObjectNames {
	return sampleAPIServerObjectNames{
		namespace:          namespace,
		roleBinding:        "wardler-auth-reader-" + namespace,
		clusterRole:        "sample-apiserver-reader-" + namespace,
		clusterRoleBinding: "wardler:" + namespace + "sample-apiserver-reader-" + namespace,
	}
}

// SetUpSampleAPIServer sets up a sample-apiserver, and waits until the aggregator serves its
// flunders.
func SetUpSampleAPIServer(ctx context.Context, f *e2eFramework, aggrclient *aggregatorclient.Clientset, n sampleAPIServerObjectNames, apiServiceGroupName, apiServiceVersion string) {
	framework := f.shims()
	client := f.ClientSet
	restClient := client.Discovery().RESTClient()
	apiServiceName := apiServiceVersion + "." + apiServiceGroupName
	registerSampleAPIServer(ctx, f, aggrclient, n, apiServiceGroupName, apiServiceVersion)

	var (
		currentAPIService     *apiregistrationv1.APIService
		apiServiceErr, getErr error
	)
	err := pollTimed(ctx, framework, 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {

		a, err := aggrclient.ApiregistrationV1().APIServices().Get(ctx, apiServiceName, metav1.GetOptions{})
		if err == nil {
			currentAPIService = a
		}
		apiServiceErr = lastAnswer(apiServiceErr, err)

		request := restClient.Get().AbsPath("/apis/" + apiServiceGroupName + "/" + apiServiceVersion + "/namespaces/default/flunders")
		request.SetHeader("Accept", "application/json")
		_, err = request.DoRaw(ctx)
		getErr = lastAnswer(getErr, err)
		if err != nil {
			status, ok := err.(*apierrors.StatusError)
			if !ok {
				return false, err
			}
			if status.Status().Code == 403 || status.Status().Code == 503 {
				return false, nil
			}
			if status.Status().Code == 404 && strings.HasPrefix(err.Error(), "the server could not find the requested resource") {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}, "Waited %s for the sample-apiserver to be ready to handle requests.")
	if err != nil {
		currentAPIServiceJSON, _ := json.Marshal(currentAPIService)
		framework.Logf("current APIService: %s (error: %v)", string(currentAPIServiceJSON), apiServiceErr)
		framework.Logf("last answer to GET flunders: %v", getErr)
		framework.Logf("log of the sample-apiserver: %s", f.sampleLog())
	}
	framework.ExpectNoError(err, "gave up waiting for apiservice wardle to come up successfully")
}

// lastAnswer is err unless it is not the server's answer (the poll's deadline cut the request
// short): then the previous one.
func lastAnswer(previous, err error) error {
	var status *apierrors.StatusError
	if err == nil || errors.As(err, &status) {
		return err
	}
	return previous
}

// registerSampleAPIServer is the spec's SetUpSampleAPIServer up to its last wait: the Secret,
// the RBAC objects, the sample-apiserver (a process here), its Service, ServiceAccount and
// auth-reader RoleBinding, and the APIService.
func registerSampleAPIServer(ctx context.Context, f *e2eFramework, aggrclient *aggregatorclient.Clientset, n sampleAPIServerObjectNames, apiServiceGroupName, apiServiceVersion string) {
	framework, ginkgo := f.shims(), f.shims()
	ginkgo.By("Registering the sample API server.")
	client := f.ClientSet
	certCtx := setupServerCert(framework, n.namespace, "sample-api")
	apiServiceName := apiServiceVersion + "." + apiServiceGroupName

	// kubectl create -f namespace.yaml
	// NOTE: aggregated apis should generally be set up in their own namespace. As the test framework is setting up a new namespace, we are just using that.

	// kubectl create -f secret.yaml
	secretName := "sample-apiserver-secret"
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: secretName,
		},
		Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{
			"tls.crt": certCtx.Cert,
			"tls.key": certCtx.Key,
		},
	}
	_, err := client.CoreV1().Secrets(n.namespace).Create(ctx, secret, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating secret %s in.namespace %s", secretName, n.namespace)

	createSampleRBAC(ctx, f, n)

	// kubectl create -f deploy.yaml: a process, on this port, started below.
	port, err := kubereference.FreePort("127.0.0.1")
	framework.ExpectNoError(err, "choosing the sample-apiserver's port")

	// kubectl create -f service.yaml
	service := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: n.namespace,
			Name:      "sample-api",
			Labels:    map[string]string{"test": "aggregator"},
		},
		Spec: v1.ServiceSpec{
			Type:         v1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports: []v1.ServicePort{
				{
					Protocol: v1.ProtocolTCP,
					Port:     int32(port),
				},
			},
		},
	}
	_, err = client.CoreV1().Services(n.namespace).Create(ctx, service, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating service %s in namespace %s", "sample-api", n.namespace)

	// kubectl create -f serviceAccount.yaml
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sample-apiserver"}}
	_, err = client.CoreV1().ServiceAccounts(n.namespace).Create(ctx, sa, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating service account %s in namespace %s", "sample-apiserver", n.namespace)

	// kubectl create -f auth-reader.yaml
	_, err = client.RbacV1().RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.roleBinding,
			Annotations: map[string]string{
				rbacv1.AutoUpdateAnnotationKey: "true",
			},
		},
		RoleRef: rbacv1.RoleRef{
			APIGroup: "",
			Kind:     "Role",
			Name:     "extension-apiserver-authentication-reader",
		},
		Subjects: []rbacv1.Subject{
			{
				Kind:      "ServiceAccount",
				Name:      "default",
				Namespace: n.namespace,
			},
		},
	}, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating role binding %s in namespace %s", n.roleBinding, "kube-system")

	// Wait for the extension apiserver to be up and healthy
	// kubectl get deployments -n <aggregated-api-namespace> && status == Running
	err = f.startSampleAPIServer(ctx, port, certCtx)
	framework.ExpectNoError(err, "deploying extension apiserver in namespace %s", n.namespace)

	// kubectl create -f apiservice.yaml
	_, err = aggrclient.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: apiServiceName},
		Spec: apiregistrationv1.APIServiceSpec{
			Service: &apiregistrationv1.ServiceReference{
				Namespace: n.namespace,
				Name:      "sample-api",
				Port:      ptr.To(int32(port)),
			},
			Group:                apiServiceGroupName,
			Version:              apiServiceVersion,
			CABundle:             certCtx.CA,
			GroupPriorityMinimum: 2000,
			VersionPriority:      200,
		},
	}, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating apiservice %s", apiServiceName)
}

// createSampleRBAC is the spec's `if e2eauth.IsRBACEnabled` block: the ClusterRole the
// sample-apiserver's informers need, its binding, and the auth-delegator binding.
func createSampleRBAC(ctx context.Context, f *e2eFramework, n sampleAPIServerObjectNames) {
	framework := f.shims()
	client := f.ClientSet
	// kubectl create -f clusterrole.yaml
	_, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{

		ObjectMeta: metav1.ObjectMeta{Name: n.clusterRole},
		Rules: []rbacv1.PolicyRule{
			rbacv1helpers.NewRule("get", "list", "watch").Groups("").Resources("namespaces").RuleOrDie(),
			rbacv1helpers.NewRule("get", "list", "watch").Groups("admissionregistration.k8s.io").Resources("*").RuleOrDie(),
			rbacv1helpers.NewRule("get", "list", "watch").Groups("flowcontrol.apiserver.k8s.io").Resources("prioritylevelconfigurations", "flowschemas").RuleOrDie(),
		},
	}, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating cluster role %s", n.clusterRole)

	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.clusterRoleBinding,
		},
		RoleRef: rbacv1.RoleRef{
			APIGroup: "rbac.authorization.k8s.io",
			Kind:     "ClusterRole",
			Name:     n.clusterRole,
		},
		Subjects: []rbacv1.Subject{
			{
				APIGroup:  "",
				Kind:      "ServiceAccount",
				Name:      "default",
				Namespace: n.namespace,
			},
		},
	}, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating cluster role binding %s", n.clusterRoleBinding)

	// kubectl create -f authDelegator.yaml
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name: "wardler:" + n.namespace + ":auth-delegator",
		},
		RoleRef: rbacv1.RoleRef{
			APIGroup: "rbac.authorization.k8s.io",
			Kind:     "ClusterRole",
			Name:     "system:auth-delegator",
		},
		Subjects: []rbacv1.Subject{
			{
				APIGroup:  "",
				Kind:      "ServiceAccount",
				Name:      "default",
				Namespace: n.namespace,
			},
		},
	}, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating cluster role binding %s", "wardler:"+n.namespace+":auth-delegator")
}

// setupServerCert is the spec's (certs.go): a CA and a serving certificate for
// serviceName.namespaceName.svc.
func setupServerCert(framework e2eShims, namespaceName, serviceName string) samplereference.ServingCertificate {
	cert, err := samplereference.NewServingCertificate(samplereference.ServerName(serviceName, namespaceName))
	framework.ExpectNoError(err, "Failed to create the serving certificate")
	return cert
}

// testSampleAPIServer is a basic test if the sample-apiserver code from 1.29 and compiled against 1.29
// will work on the current Aggregator/API-Server.
func testSampleAPIServer(ctx context.Context, f *e2eFramework, aggrclient *aggregatorclient.Clientset, apiServiceGroupName, apiServiceVersion string) {
	framework, ginkgo := f.shims(), f.shims()
	n := generateSampleAPIServerObjectNames(f.Namespace.Name)
	SetUpSampleAPIServer(ctx, f, aggrclient, n, apiServiceGroupName, apiServiceVersion)
	client := f.ClientSet
	restClient := client.Discovery().RESTClient()

	flunderName := generateFlunderName("rest-flunder")
	apiServiceName := apiServiceVersion + "." + apiServiceGroupName

	// kubectl create -f flunders-1.yaml -v 9
	// curl -k -v -XPOST https://localhost/apis/wardle.example.com/v1alpha1/namespaces/default/flunders
	// Request Body: {"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"labels":{"sample-label":"true"},"name":"test-flunder","namespace":"default"}}
	flunder := `{"apiVersion":"` + apiServiceGroupName + `/` + apiServiceVersion + `","kind":"Flunder","metadata":{"labels":{"sample-label":"true"},"name":"` + flunderName + `","namespace":"default"}}`
	result := restClient.Post().AbsPath("/apis/"+apiServiceGroupName+"/"+apiServiceVersion+"/namespaces/default/flunders").Body([]byte(flunder)).SetHeader("Accept", "application/json").Do(ctx)
	framework.ExpectNoError(result.Error(), "creating a new flunders resource")
	var statusCode int
	result.StatusCode(&statusCode)
	if statusCode != 201 {
		framework.Failf("Flunders client creation response was status %d, not 201", statusCode)
	}
	u := &unstructured.Unstructured{}
	if err := result.Into(u); err != nil {
		framework.ExpectNoError(err, "reading created response")
	}

	if u.GetAPIVersion() != apiServiceGroupName+"/"+apiServiceVersion || u.GetKind() != "Flunder" || u.GetName() != flunderName {
		framework.Failf("created %s %s %s, want %s/%s Flunder %s", u.GetAPIVersion(), u.GetKind(), u.GetName(), apiServiceGroupName, apiServiceVersion, flunderName)
	}

	// kubectl get flunders -v 9
	// curl -k -v -XGET https://localhost/apis/wardle.example.com/v1alpha1/namespaces/default/flunders
	contents, err := restClient.Get().AbsPath("/apis/"+apiServiceGroupName+"/"+apiServiceVersion+"/namespaces/default/flunders").SetHeader("Accept", "application/json").DoRaw(ctx)
	framework.ExpectNoError(err, "attempting to get a newly created flunders resource")
	var flundersList unstructured.UnstructuredList
	err = flundersList.UnmarshalJSON(contents)
	validateErrorWithDebugInfo(ctx, f, err, "Error in unmarshalling %T response from server %s", contents, "/apis/"+apiServiceGroupName+"/"+apiServiceVersion)
	if len(flundersList.Items) != 1 {
		framework.Failf("failed to get back the correct flunders list %v", flundersList)
	}

	// kubectl delete flunder test-flunder -v 9
	// curl -k -v -XDELETE  https://35.193.112.40/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/test-flunder
	_, err = restClient.Delete().AbsPath("/apis/" + apiServiceGroupName + "/" + apiServiceVersion + "/namespaces/default/flunders/" + flunderName).DoRaw(ctx)
	validateErrorWithDebugInfo(ctx, f, err, "attempting to delete a newly created flunders(%v) resource", flundersList.Items)

	// kubectl get flunders -v 9
	// curl -k -v -XGET https://localhost/apis/wardle.example.com/v1alpha1/namespaces/default/flunders
	contents, err = restClient.Get().AbsPath("/apis/"+apiServiceGroupName+"/"+apiServiceVersion+"/namespaces/default/flunders").SetHeader("Accept", "application/json").DoRaw(ctx)
	framework.ExpectNoError(err, "confirming delete of a newly created flunders resource")
	err = flundersList.UnmarshalJSON(contents)
	validateErrorWithDebugInfo(ctx, f, err, "Error in unmarshalling %T response from server %s", contents, "/apis/"+apiServiceGroupName+"/"+apiServiceVersion)
	if len(flundersList.Items) != 0 {
		framework.Failf("failed to get back the correct deleted flunders list %v", flundersList)
	}

	flunderName = generateFlunderName("dynamic-flunder")

	// Rerun the Create/List/Delete tests using the Dynamic client.
	// Discovery may still show the aggregated API group as stale if the
	// kube-apiserver's DiscoveryManager hasn't synced yet, so poll until
	// the wardle/flunders GVR appears in the discovery results.
	gvr := schema.GroupVersionResource{Group: apiServiceGroupName, Version: apiServiceVersion, Resource: "flunders"}
	err = pollTimed(ctx, framework, 1*time.Second, 60*time.Second, func(ctx context.Context) (bool, error) {
		resources, discoveryErr := client.Discovery().ServerPreferredNamespacedResources()
		if discoveryErr != nil {
			framework.Logf("discovery returned error (may be transient), will retry: %v", discoveryErr)
			return false, nil
		}
		groupVersionResources, err := discovery.GroupVersionResources(resources)
		if err != nil {
			framework.Logf("error getting group version resources for dynamic client, will retry: %v", err)
			return false, nil
		}
		_, ok := groupVersionResources[gvr]
		return ok, nil
	}, "Waited %s for the dynamic client to discover wardle/flunders.")
	framework.ExpectNoError(err, "timed out waiting for discovery to include wardle/flunders GVR")
	dynamicClient := f.DynamicClient.Resource(gvr).Namespace(n.namespace)

	// kubectl create -f flunders-1.yaml
	// Request Body: {"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"labels":{"sample-label":"true"},"name":"test-flunder","namespace":"default"}}
	testFlunder := map[string]any{
		"kind":       "Flunder",
		"apiVersion": apiServiceGroupName + "/" + apiServiceVersion,
		"metadata":   map[string]any{"name": flunderName, "creationTimestamp": nil},
		"spec":       map[string]any{},
		"status":     map[string]any{},
	}
	jsonFlunder, err := json.Marshal(testFlunder)
	framework.ExpectNoError(err, "marshalling test-flunder for create using dynamic client")
	unstruct := &unstructured.Unstructured{}
	err = unstruct.UnmarshalJSON(jsonFlunder)
	framework.ExpectNoError(err, "unmarshalling test-flunder as unstructured for create using dynamic client")
	_, err = dynamicClient.Create(ctx, unstruct, metav1.CreateOptions{})
	framework.ExpectNoError(err, "listing flunders using dynamic client")

	// kubectl get flunders
	unstructuredList, err := dynamicClient.List(ctx, metav1.ListOptions{})
	framework.ExpectNoError(err, "listing flunders using dynamic client")
	if len(unstructuredList.Items) != 1 {
		framework.Failf("failed to get back the correct flunders list %v from the dynamic client", unstructuredList)
	}

	ginkgo.By("Read Status for " + apiServiceName)
	statusContent, err := restClient.Get().
		AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+apiServiceName+"/status").
		SetHeader("Accept", "application/json").DoRaw(ctx)
	framework.ExpectNoError(err, "No response for .../apiservices/"+apiServiceName+"/status. Error: %v", err)

	var jr *apiregistrationv1.APIService
	err = json.Unmarshal([]byte(statusContent), &jr)
	framework.ExpectNoError(err, "Failed to process statusContent: %v | err: %v ", string(statusContent), err)
	if _, err := resourceversion.CompareResourceVersion(jr.ResourceVersion, jr.ResourceVersion); err != nil {
		framework.Failf("APIService %s: %v", apiServiceName, err)
	}
	if len(jr.Status.Conditions) == 0 || jr.Status.Conditions[0].Message != "all checks passed" {
		framework.Failf("The Message returned was not \"all checks passed\": conditions %+v", jr.Status.Conditions)
	}

	oldRV := jr.ResourceVersion
	ginkgo.By("kubectl patch apiservice " + apiServiceName + " -p '{\"spec\":{\"versionPriority\": 400}}'")
	patchContent, err := restClient.Patch(types.MergePatchType).
		AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+apiServiceName).
		SetHeader("Accept", "application/json").
		Body([]byte(`{"spec":{"versionPriority": 400}}`)).DoRaw(ctx)

	framework.ExpectNoError(err, "Patch failed for .../apiservices/"+apiServiceName+". Error: %v", err)
	err = json.Unmarshal([]byte(patchContent), &jr)
	framework.ExpectNoError(err, "Failed to process patchContent: %v | err: %v ", string(patchContent), err)
	if jr.Spec.VersionPriority != 400 {
		framework.Failf("The VersionPriority returned was %d", jr.Spec.VersionPriority)
	}
	if c, err := resourceversion.CompareResourceVersion(oldRV, jr.ResourceVersion); err != nil || c != -1 {
		framework.Failf("patched object should have a larger resource version: %s then %s (%v)", oldRV, jr.ResourceVersion, err)
	}

	ginkgo.By("List APIServices")
	listApiservices, err := restClient.Get().
		AbsPath("/apis/apiregistration.k8s.io/v1/apiservices").
		SetHeader("Accept", "application/json").DoRaw(ctx)

	framework.ExpectNoError(err, "No response for /apis/apiregistration.k8s.io/v1/apiservices Error: %v", err)

	var list *apiregistrationv1.APIServiceList
	err = json.Unmarshal([]byte(listApiservices), &list)
	framework.ExpectNoError(err, "Failed to process APIServiceList: %v | err: %v ", list, err)

	locatedWardle := false
	for _, item := range list.Items {
		if item.Name == apiServiceName {
			framework.Logf("Found %s in APIServiceList", apiServiceName)
			locatedWardle = true
			break
		}
	}
	if !locatedWardle {
		framework.Failf("Unable to find %s in APIServiceList", apiServiceName)
	}

	// As the APIService doesn't have any labels currently set we need to
	// set one so that we can select it later when we call deleteCollection
	ginkgo.By("Adding a label to the APIService")
	apiServiceClient := aggrclient.ApiregistrationV1().APIServices()
	apiServiceLabel := map[string]string{"e2e-apiservice": "patched"}
	apiServicePatch, err := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{
			"labels": apiServiceLabel,
		},
	})
	framework.ExpectNoError(err, "failed to Marshal APIService JSON patch")
	_, err = apiServiceClient.Patch(ctx, apiServiceName, types.StrategicMergePatchType, []byte(apiServicePatch), metav1.PatchOptions{})
	framework.ExpectNoError(err, "failed to patch APIService")

	patchedApiService, err := apiServiceClient.Get(ctx, apiServiceName, metav1.GetOptions{})
	framework.ExpectNoError(err, "Unable to retrieve api service %s", apiServiceName)
	framework.Logf("APIService labels: %v", patchedApiService.Labels)

	ginkgo.By("Updating APIService Status")
	var updatedStatus, wardle *apiregistrationv1.APIService

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var statusToUpdate *apiregistrationv1.APIService
		statusContent, err = restClient.Get().
			AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+apiServiceName+"/status").
			SetHeader("Accept", "application/json").DoRaw(ctx)
		framework.ExpectNoError(err, "No response for .../apiservices/"+apiServiceName+"/status. Error: %v", err)

		err = json.Unmarshal([]byte(statusContent), &statusToUpdate)
		framework.ExpectNoError(err, "Failed to process statusContent: %v | err: %v ", string(statusContent), err)

		statusToUpdate.Status.Conditions = append(statusToUpdate.Status.Conditions, apiregistrationv1.APIServiceCondition{
			Type:    "StatusUpdated",
			Status:  "True",
			Reason:  "E2E",
			Message: "Set from e2e test",
		})

		updatedStatus, err = apiServiceClient.UpdateStatus(ctx, statusToUpdate, metav1.UpdateOptions{})
		return err
	})
	framework.ExpectNoError(err, "Failed to update status. %v", err)
	framework.Logf("updatedStatus.Conditions: %#v", updatedStatus.Status.Conditions)

	ginkgo.By("Confirm that " + apiServiceName + " /status was updated")
	statusContent, err = restClient.Get().
		AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+apiServiceName+"/status").
		SetHeader("Accept", "application/json").DoRaw(ctx)
	framework.ExpectNoError(err, "No response for .../apiservices/"+apiServiceName+"/status. Error: %v", err)

	err = json.Unmarshal([]byte(statusContent), &wardle)
	framework.ExpectNoError(err, "Failed to process statusContent: %v | err: %v ", string(statusContent), err)

	foundUpdatedStatusCondition := false
	for _, cond := range wardle.Status.Conditions {
		if cond.Type == "StatusUpdated" && cond.Reason == "E2E" && cond.Message == "Set from e2e test" {
			framework.Logf("Found APIService %v with Labels: %v & Condition: %v", wardle.ObjectMeta.Name, wardle.Labels, cond)
			foundUpdatedStatusCondition = true
			break
		} else {
			framework.Logf("Observed APIService %v with Labels: %v & Condition: %v", wardle.ObjectMeta.Name, wardle.Labels, cond)
		}
	}
	if !foundUpdatedStatusCondition {
		framework.Failf("The updated status condition was not found in:\n%+v", wardle.Status.Conditions)
	}
	framework.Logf("Found updated status condition for %s", wardle.ObjectMeta.Name)

	ginkgo.By(fmt.Sprintf("Replace APIService %s", apiServiceName))
	var updatedApiService *apiregistrationv1.APIService

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		currentApiService, err := apiServiceClient.Get(ctx, apiServiceName, metav1.GetOptions{})
		framework.ExpectNoError(err, "Unable to get APIService %s", apiServiceName)
		currentApiService.Labels = map[string]string{
			apiServiceName: "updated",
		}
		updatedApiService, err = apiServiceClient.Update(ctx, currentApiService, metav1.UpdateOptions{})
		return err
	})
	framework.ExpectNoError(err)
	if updatedApiService.Labels[apiServiceName] != "updated" {
		framework.Failf("should have the updated label but have %q", updatedApiService.Labels[apiServiceName])
	}
	framework.Logf("Found updated apiService label for %q", apiServiceName)

	// kubectl delete flunder test-flunder
	ginkgo.By(fmt.Sprintf("Delete flunders resource %q", flunderName))
	err = dynamicClient.Delete(ctx, flunderName, metav1.DeleteOptions{})
	validateErrorWithDebugInfo(ctx, f, err, "deleting flunders(%v) using dynamic client", unstructuredList.Items)

	// kubectl get flunders
	unstructuredList, err = dynamicClient.List(ctx, metav1.ListOptions{})
	framework.ExpectNoError(err, "listing flunders using dynamic client")
	if len(unstructuredList.Items) != 0 {
		framework.Failf("failed to get back the correct deleted flunders list %v from the dynamic client", unstructuredList)
	}

	ginkgo.By("Recreating test-flunder before removing endpoint via deleteCollection")
	jsonFlunder, err = json.Marshal(testFlunder)
	framework.ExpectNoError(err, "marshalling test-flunder for create using dynamic client")
	unstruct = &unstructured.Unstructured{}
	err = unstruct.UnmarshalJSON(jsonFlunder)
	framework.ExpectNoError(err, "unmarshalling test-flunder as unstructured for create using dynamic client")
	_, err = dynamicClient.Create(ctx, unstruct, metav1.CreateOptions{})
	framework.ExpectNoError(err, "listing flunders using dynamic client")

	// kubectl get flunders
	unstructuredList, err = dynamicClient.List(ctx, metav1.ListOptions{})
	framework.ExpectNoError(err, "listing flunders using dynamic client")
	if len(unstructuredList.Items) != 1 {
		framework.Failf("failed to get back the correct flunders list %v from the dynamic client", unstructuredList)
	}

	ginkgo.By("Read " + apiServiceName + " /status before patching it")
	statusContent, err = restClient.Get().
		AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+apiServiceName+"/status").
		SetHeader("Accept", "application/json").DoRaw(ctx)
	framework.ExpectNoError(err, "No response for .../apiservices/"+apiServiceName+"/status. Error: %v", err)

	wardle.Reset()
	err = json.Unmarshal([]byte(statusContent), &wardle)
	framework.ExpectNoError(err, "Failed to process statusContent: %v | err: %v ", string(statusContent), err)

	ginkgo.By("Patch APIService Status")
	patch := map[string]interface{}{
		"status": map[string]interface{}{
			"conditions": append(wardle.Status.Conditions, apiregistrationv1.APIServiceCondition{
				Type:    "StatusPatched",
				Status:  "True",
				Reason:  "E2E",
				Message: "Set by e2e test",
			}),
		},
	}
	payload, err := json.Marshal(patch)
	framework.ExpectNoError(err, "Failed to marshal JSON. %v", err)

	_, err = restClient.Patch(types.MergePatchType).
		AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+apiServiceName+"/status").
		SetHeader("Accept", "application/json").
		Body([]byte(payload)).
		DoRaw(ctx)
	framework.ExpectNoError(err, "Patch failed for .../apiservices/"+apiServiceName+"/status. Error: %v", err)

	ginkgo.By("Confirm that " + apiServiceName + " /status was patched")
	statusContent, err = restClient.Get().
		AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+apiServiceName+"/status").
		SetHeader("Accept", "application/json").DoRaw(ctx)
	framework.ExpectNoError(err, "No response for .../apiservices/"+apiServiceName+"/status. Error: %v", err)

	wardle.Reset()
	err = json.Unmarshal([]byte(statusContent), &wardle)
	framework.ExpectNoError(err, "Failed to process statusContent: %v | err: %v ", string(statusContent), err)

	foundPatchedStatusCondition := false
	for _, cond := range wardle.Status.Conditions {
		if cond.Type == "StatusPatched" && cond.Reason == "E2E" && cond.Message == "Set by e2e test" {
			framework.Logf("Found APIService %v with Labels: %v & Conditions: %v", wardle.ObjectMeta.Name, wardle.Labels, cond)
			foundPatchedStatusCondition = true
			break
		} else {
			framework.Logf("Observed APIService %v with Labels: %v & Conditions: %v", wardle.ObjectMeta.Name, wardle.Labels, cond)
		}
	}
	if !foundPatchedStatusCondition {
		framework.Failf("The patched status condition was not found in:\n%+v", wardle.Status.Conditions)
	}
	framework.Logf("Found patched status condition for %s", wardle.ObjectMeta.Name)

	apiServiceLabelSelector := labels.SelectorFromSet(updatedApiService.Labels).String()
	ginkgo.By(fmt.Sprintf("APIService deleteCollection with labelSelector: %q", apiServiceLabelSelector))

	err = aggrclient.ApiregistrationV1().APIServices().DeleteCollection(ctx,
		metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: apiServiceLabelSelector})
	framework.ExpectNoError(err, "Unable to delete apiservice %s", apiServiceName)

	ginkgo.By("Confirm that the generated APIService has been deleted")
	err = wait.PollImmediate(apiServiceRetryPeriod, apiServiceRetryTimeout, checkApiServiceListQuantity(ctx, framework, aggrclient, apiServiceLabelSelector, 0))
	framework.ExpectNoError(err, "failed to count the required APIServices")
	framework.Logf("APIService %s has been deleted.", apiServiceName)

	cleanupSampleAPIServer(ctx, f, aggrclient, n, apiServiceName)
}

// pollTimed will call Poll but time how long Poll actually took.
// It will then framework.Logf the msg with the duration of the Poll.
// It is assumed that msg will contain one %s for the elapsed time.
func pollTimed(ctx context.Context, framework e2eShims, interval, timeout time.Duration, condition wait.ConditionWithContextFunc, msg string) error {
	defer func(start time.Time, msg string) {
		elapsed := time.Since(start)
		framework.Logf(msg, elapsed)
	}(time.Now(), msg)
	return wait.PollUntilContextTimeout(ctx, interval, timeout, false, condition)
}

func validateErrorWithDebugInfo(ctx context.Context, f *e2eFramework, err error, msg string, fields ...interface{}) {
	if err != nil {
		msg := fmt.Sprintf(msg, fields...)
		msg += fmt.Sprintf(" but received unexpected error:\n%v", err)
		msg += fmt.Sprintf("\nlog of the sample-apiserver:\n%s", f.sampleLog())
		f.shims().Failf("%s", msg)
	}
}

func generateFlunderName(base string) string {
	id, err := rand.Int(rand.Reader, big.NewInt(2147483647))
	if err != nil {
		return base
	}
	return fmt.Sprintf("%s-%d", base, id)
}

func checkApiServiceListQuantity(ctx context.Context, framework e2eShims, aggrclient *aggregatorclient.Clientset, label string, quantity int) func() (bool, error) {
	return func() (bool, error) {
		var err error

		framework.Logf("Requesting list of APIServices to confirm quantity")

		list, err := aggrclient.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{LabelSelector: label})
		if err != nil {
			return false, err
		}

		if len(list.Items) != quantity {
			return false, err
		}
		framework.Logf("Found %d APIService with label %q", quantity, label)
		return true, nil
	}
}

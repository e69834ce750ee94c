// Package e2ekube holds the harness that runs Kubernetes' own e2e suite (k8s.io/kubernetes
// v1.37.2, test/e2e), selecting `sig-api-machinery && !Disruptive && !Flaky && !/^Feature:/`,
// against lapis and against kube-reference, and compares the two: build.sh builds the e2e
// binary once outside the repository, run.sh runs both servers and report.py turns their JUnit
// reports into pass/fail/skip counts and the list of specs that pass on kube and fail on lapis.
// The Go test here checks report.py on small JUnit reports; it runs no e2e spec.
package e2ekube

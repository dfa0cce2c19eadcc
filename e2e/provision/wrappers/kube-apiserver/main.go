// Command kube-apiserver is the upstream kube-apiserver, built from the k8s.io/kubernetes
// module as served by the Go module proxy. It only exists so the e2e layer can build the
// binary without a Kubernetes source checkout; the body mirrors cmd/kube-apiserver.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

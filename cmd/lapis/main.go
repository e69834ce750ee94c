package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/embed"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/kubectl/pkg/cmd"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	_ "k8s.io/apimachinery/pkg/util/managedfields"
	_ "k8s.io/client-go/applyconfigurations"
)

func main() {
	_ = embed.NewConfig()
	_ = clientv3.Config{}
	if len(os.Args) > 1 && os.Args[1] == "kubectl" {
		c := cmd.NewDefaultKubectlCommand()
		c.SetArgs(os.Args[2:])
		c.Execute()
	}
	fmt.Println("ok")
}

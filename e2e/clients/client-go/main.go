// Command client-go-check drives client-go's own clients against an apiserver and prints what it saw
// as one JSON report, so the e2e layer can run it against the embedded apiserver and a real
// kube-apiserver and compare the two reports.
//
//	client-go-check run --kubeconfig PATH [--namespace NS]   the checks; the report on stdout
//	client-go-check fixtures DIR                              protobuf bodies with their JSON forms
//
// The report holds facts that must not depend on the server's speed (outcomes, error reasons and
// codes, what an informer saw), and timings only as booleans against generous bounds.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: client-go-check run --kubeconfig PATH [--namespace NS] | fixtures DIR")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "run":
		kubeconfig, ns := "", "client-go-check"
		for i := 2; i+1 < len(os.Args); i += 2 {
			switch os.Args[i] {
			case "--kubeconfig":
				kubeconfig = os.Args[i+1]
			case "--namespace":
				ns = os.Args[i+1]
			}
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			fail(err)
		}
		report := run(cfg, ns)
		out, _ := json.MarshalIndent(report, "", "  ")
		fmt.Println(string(out))
	case "fixtures":
		if len(os.Args) != 3 {
			fail(errors.New("usage: client-go-check fixtures DIR"))
		}
		if err := writeFixtures(os.Args[2]); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown command %q", os.Args[1]))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "client-go-check:", err)
	os.Exit(1)
}

// Report is the JSON the e2e test compares: one entry per check, in a stable key order.
type Report map[string]map[string]any

// errFacts is what the report keeps of an error: the Status reason and code, not the message.
func errFacts(err error) map[string]any {
	if err == nil {
		return map[string]any{"ok": true}
	}
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		st := s.Status()
		return map[string]any{"ok": false, "reason": string(st.Reason), "code": st.Code}
	}
	return map[string]any{"ok": false, "error": err.Error()}
}

func run(cfg *rest.Config, ns string) Report {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	r := Report{}
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)

	// Typed writes of built-in kinds go out as protobuf (the clientset forces it).
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	r["namespaceCreate"] = errFacts(err)

	// A shared informer with client-go's default initial list (watch-list where the server has it):
	// it must sync without the 10 s wait for an initial-events-end bookmark that never comes.
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "check"}},
			Spec: corev1.PodSpec{
				Containers:                    []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Ports: []corev1.ContainerPort{{ContainerPort: 8080, Name: "http"}}}},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
			},
		}
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod("before-informer"), metav1.CreateOptions{})
	r["podCreate"] = errFacts(err)

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	podInformer := factory.Core().V1().Pods().Informer()
	var mu sync.Mutex
	seen := map[string]bool{}
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				mu.Lock()
				seen[p.Name] = true
				mu.Unlock()
			}
		},
	})
	stop := make(chan struct{})
	start := time.Now()
	factory.Start(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	synced := cache.WaitForCacheSync(syncCtx.Done(), podInformer.HasSynced)
	syncCancel()
	// 5 s: well above a real server's sync here (well under a second) and below the 10 s fallback.
	r["informerSync"] = map[string]any{"synced": synced, "under5s": time.Since(start) < 5*time.Second, "listedBefore": has(&mu, seen, "before-informer")}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod("after-informer"), metav1.CreateOptions{})
	sawAdd := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return has(&mu, seen, "after-informer"), nil
	}) == nil
	r["informerAdd"] = map[string]any{"create": errFacts(err)["ok"], "sawAdd": sawAdd}

	// Update with a stale resourceVersion: a Conflict.
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "before-informer", metav1.GetOptions{})
	if err == nil {
		p.Labels["step"] = "one"
		_, err = cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		r["podUpdate"] = errFacts(err)
		p.Labels["step"] = "stale"
		_, err = cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		f := errFacts(err)
		f["isConflict"] = apierrors.IsConflict(err)
		r["podUpdateStale"] = f
	} else {
		r["podUpdate"] = errFacts(err)
	}

	// Server-side apply: two managers, one field; the second is refused with a conflict until it forces.
	cmA := corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"owner": "a"})
	_, err = cs.CoreV1().ConfigMaps(ns).Apply(ctx, cmA, metav1.ApplyOptions{FieldManager: "manager-a"})
	r["applyFirst"] = errFacts(err)
	cmB := corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"owner": "b"})
	_, err = cs.CoreV1().ConfigMaps(ns).Apply(ctx, cmB, metav1.ApplyOptions{FieldManager: "manager-b"})
	f := errFacts(err)
	f["isConflict"] = apierrors.IsConflict(err)
	if s := (apierrors.APIStatus)(nil); errors.As(err, &s) && s.Status().Details != nil {
		causes := []string{}
		for _, c := range s.Status().Details.Causes {
			causes = append(causes, string(c.Type)+" "+c.Field)
		}
		f["causes"] = causes
	}
	r["applyConflict"] = f
	got, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, cmB, metav1.ApplyOptions{FieldManager: "manager-b", Force: true})
	f = errFacts(err)
	if err == nil {
		f["owner"] = got.Data["owner"]
		managers := []string{}
		for _, m := range got.ManagedFields {
			managers = append(managers, m.Manager+"/"+string(m.Operation))
		}
		sort.Strings(managers)
		f["managers"] = managers
	}
	r["applyForce"] = f

	// The dynamic client on a custom resource, and a dynamic informer over it.
	r["crd"] = dynamicChecks(ctx, dyn, ns)

	// Leader election on a Lease (typed, so protobuf), released on cancel.
	r["leaderElection"] = leaderChecks(ctx, cs, ns)

	// An eviction (policy/v1, protobuf) and a delete with DeleteOptions (protobuf).
	err = cs.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: "after-informer", Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
	})
	r["evict"] = errFacts(err)
	err = cs.CoreV1().Pods(ns).Delete(ctx, "before-informer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	r["podDelete"] = errFacts(err)
	close(stop)
	err = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	r["namespaceDelete"] = errFacts(err)
	return r
}

func has(mu *sync.Mutex, seen map[string]bool, name string) bool {
	mu.Lock()
	defer mu.Unlock()
	return seen[name]
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
var gadgetGVR = schema.GroupVersionResource{Group: "check.reconcile-loop.dev", Version: "v1", Resource: "gadgets"}

func dynamicChecks(ctx context.Context, dyn dynamic.Interface, ns string) map[string]any {
	out := map[string]any{}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets.check.reconcile-loop.dev"},
		"spec": map[string]any{
			"group": "check.reconcile-loop.dev",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer"}},
					}},
				}},
			}},
		},
	}}
	_, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	out["crdCreate"] = errFacts(err)["ok"]
	established := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(crdGVR).Get(ctx, "gadgets.check.reconcile-loop.dev", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	}) == nil
	out["established"] = established
	// The resource is served a moment after Established on a real server (discovery, handlers): retry the first create.
	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "check.reconcile-loop.dev/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1"}, "spec": map[string]any{"size": int64(1)},
	}}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gadgetGVR).Namespace(ns).Create(ctx, gadget.DeepCopy(), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	out["crCreate"] = err == nil

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	inf := factory.ForResource(gadgetGVR).Informer()
	var mu sync.Mutex
	sizes := map[string]int64{}
	record := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			mu.Lock()
			sizes[u.GetName()] = s
			mu.Unlock()
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, n any) { record(n) }})
	stop := make(chan struct{})
	defer close(stop)
	start := time.Now()
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	out["informerSynced"] = cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	cancel()
	out["informerUnder5s"] = time.Since(start) < 5*time.Second
	u, err := dyn.Resource(gadgetGVR).Namespace(ns).Get(ctx, "g1", metav1.GetOptions{})
	if err == nil {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "size")
		_, err = dyn.Resource(gadgetGVR).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{})
	}
	out["crUpdate"] = errFacts(err)["ok"]
	out["informerSawUpdate"] = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return sizes["g1"] == 2, nil
	}) == nil
	err = dyn.Resource(gadgetGVR).Namespace(ns).Delete(ctx, "g1", metav1.DeleteOptions{})
	out["crDelete"] = errFacts(err)["ok"]
	err = dyn.Resource(crdGVR).Delete(ctx, "gadgets.check.reconcile-loop.dev", metav1.DeleteOptions{})
	out["crdDelete"] = errFacts(err)["ok"]
	return out
}

func leaderChecks(ctx context.Context, cs kubernetes.Interface, ns string) map[string]any {
	out := map[string]any{}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "check-leader", Namespace: ns},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "check-a"},
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	started := make(chan struct{})
	done := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   4 * time.Second,
		RenewDeadline:   3 * time.Second,
		RetryPeriod:     500 * time.Millisecond,
		ReleaseOnCancel: true,
		Name:            "check",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		out["error"] = err.Error()
		return out
	}
	go func() {
		elector.Run(lctx)
		close(done)
	}()
	select {
	case <-started:
		out["acquired"] = true
	case <-lctx.Done():
		out["acquired"] = false
	}
	var lease *coordinationv1.Lease
	lease, err = cs.CoordinationV1().Leases(ns).Get(ctx, "check-leader", metav1.GetOptions{})
	if err == nil && lease.Spec.HolderIdentity != nil {
		out["holder"] = *lease.Spec.HolderIdentity
		out["hasRenewTime"] = lease.Spec.RenewTime != nil
		out["leaseDurationSeconds"] = ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)
	}
	// Renewals go through: wait past one retry period and check the renew time moved.
	before := lease
	time.Sleep(1500 * time.Millisecond)
	after, err := cs.CoordinationV1().Leases(ns).Get(ctx, "check-leader", metav1.GetOptions{})
	out["renewed"] = err == nil && before != nil && before.Spec.RenewTime != nil && after.Spec.RenewTime != nil &&
		after.Spec.RenewTime.After(before.Spec.RenewTime.Time)
	cancel()
	<-done
	released, err := cs.CoordinationV1().Leases(ns).Get(ctx, "check-leader", metav1.GetOptions{})
	out["releasedHolderEmpty"] = err == nil && (released.Spec.HolderIdentity == nil || *released.Spec.HolderIdentity == "")
	return out
}

// writeFixtures writes protobuf request bodies as client-go encodes them (name.pb) beside the JSON
// the same object encodes to (name.json): the embedded apiserver's decoder is tested against both.
func writeFixtures(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	created := metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	renew := metav1.NewMicroTime(time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC))
	objects := map[string]runtime.Object{
		"namespace": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-1", Labels: map[string]string{"team": "a"}}},
		"pod": &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "default", Labels: map[string]string{"app": "x", "tier": "web"},
				Annotations: map[string]string{"note": "ünïcode"}, Finalizers: []string{"example.com/hold"},
				CreationTimestamp: created,
				OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u-1", Controller: ptr.To(true)}},
			},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "main", Image: "registry.k8s.io/pause:3.10", Command: []string{"/pause"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "EMPTY"}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
						PeriodSeconds: 5,
					},
					LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
				}},
				Volumes: []corev1.Volume{
					{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				AutomountServiceAccountToken:  ptr.To(false),
				NodeSelector:                  map[string]string{"disk": "ssd"},
				Tolerations:                   []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](-5)}},
			},
		},
		"secret": &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Data:       map[string][]byte{"bin": {0, 1, 2, 255}, "text": []byte("hello")},
			Type:       corev1.SecretTypeOpaque,
		},
		"lease": &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To("holder-1"), LeaseDurationSeconds: ptr.To[int32](15),
				AcquireTime: &renew, RenewTime: &renew, LeaseTransitions: ptr.To[int32](0),
			},
		},
		"deleteoptions": &metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: ptr.To[types.UID]("u-1"), ResourceVersion: ptr.To("42")},
			PropagationPolicy:  ptr.To(metav1.DeletePropagationForeground),
		},
		"eviction": &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: "p", Namespace: "default"},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](3)},
		},
		"configmap-managed": &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "m", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &created,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{}}}`)},
			}}},
			Data: map[string]string{"a": "1", "empty": ""},
		},
	}
	pbInfo, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	jsonInfo, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	for name, obj := range objects {
		gv := schema.GroupVersion{Group: "", Version: "v1"}
		switch obj.(type) {
		case *coordinationv1.Lease:
			gv = coordinationv1.SchemeGroupVersion
		case *policyv1.Eviction:
			gv = policyv1.SchemeGroupVersion
		}
		var enc runtime.Encoder
		pb := scheme.Codecs.EncoderForVersion(pbInfo.Serializer, gv)
		js := scheme.Codecs.EncoderForVersion(jsonInfo.Serializer, gv)
		if _, ok := obj.(*metav1.DeleteOptions); ok {
			// client-go encodes DeleteOptions with the parameter codec's scheme: the same bytes.
			pb = scheme.Codecs.EncoderForVersion(pbInfo.Serializer, schema.GroupVersion{Version: "v1"})
		}
		for _, pair := range []struct {
			ext string
			e   runtime.Encoder
		}{{"pb", pb}, {"json", js}} {
			enc = pair.e
			data, err := runtime.Encode(enc, obj.DeepCopyObject())
			if err != nil {
				return fmt.Errorf("%s.%s: %w", name, pair.ext, err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+"."+pair.ext), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

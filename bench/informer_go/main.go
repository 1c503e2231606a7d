// The client-go reference for bench/informer_bench.cpp: one shared informer (client-go of the
// Kubernetes tree the test control plane was built from) lists and watches one kind, waits for
// sync, then prints one line:
//   <objects> <VmRSS KiB before> <VmRSS KiB synced> <VmRSS KiB after GC> <heap B synced>
//   <heap B after GC> <ms to synced>
// "after GC" is after runtime.GC() and debug.FreeOSMemory(). Typed informers for built-in kinds
// (what a Go operator uses), the dynamic (unstructured) informer for Stacks.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	krt "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func rssKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmRSS:") {
			fs := strings.Fields(s.Text())
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			return n
		}
	}
	return 0
}

func heap() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

type listFunc func(metav1.ListOptions) (krt.Object, error)
type watchFunc func(metav1.ListOptions) (watch.Interface, error)

// Clears metadata.managedFields of every listed and watched object (client-go 1.20 has no
// SetTransform; this is the ListWatch wrapper a Go operator would write instead).
func dropManagedFields(l listFunc, w watchFunc) (listFunc, watchFunc) {
	clear := func(o krt.Object) {
		if a, err := meta.Accessor(o); err == nil {
			a.SetManagedFields(nil)
		}
	}
	return func(o metav1.ListOptions) (krt.Object, error) {
			list, err := l(o)
			if err == nil {
				_ = meta.EachListItem(list, func(o krt.Object) error { clear(o); return nil })
			}
			return list, err
		}, func(o metav1.ListOptions) (watch.Interface, error) {
			wi, err := w(o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(wi, func(e watch.Event) (watch.Event, bool) {
				clear(e.Object)
				return e, true
			}), nil
		}
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	kind := flag.String("kind", "configmaps", "configmaps|stacks|statefulsets|pods|services|pvcs")
	ns := flag.String("namespace", "", "namespace (\"\" = all)")
	selector := flag.String("label-selector", "", "label selector")
	drop := flag.Bool("drop-managed-fields", false, "clear metadata.managedFields before caching")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := context.Background()
	var obj krt.Object
	var l listFunc
	var w watchFunc
	switch *kind {
	case "configmaps":
		obj = &corev1.ConfigMap{}
		c := cs.CoreV1().ConfigMaps(*ns)
		l = func(o metav1.ListOptions) (krt.Object, error) { return c.List(ctx, o) }
		w = func(o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	case "pods":
		obj = &corev1.Pod{}
		c := cs.CoreV1().Pods(*ns)
		l = func(o metav1.ListOptions) (krt.Object, error) { return c.List(ctx, o) }
		w = func(o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	case "services":
		obj = &corev1.Service{}
		c := cs.CoreV1().Services(*ns)
		l = func(o metav1.ListOptions) (krt.Object, error) { return c.List(ctx, o) }
		w = func(o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	case "pvcs":
		obj = &corev1.PersistentVolumeClaim{}
		c := cs.CoreV1().PersistentVolumeClaims(*ns)
		l = func(o metav1.ListOptions) (krt.Object, error) { return c.List(ctx, o) }
		w = func(o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	case "statefulsets":
		obj = &appsv1.StatefulSet{}
		c := cs.AppsV1().StatefulSets(*ns)
		l = func(o metav1.ListOptions) (krt.Object, error) { return c.List(ctx, o) }
		w = func(o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	case "stacks":
		obj = &unstructured.Unstructured{}
		c := dyn.Resource(schema.GroupVersionResource{Group: "kstack.io", Version: "v1beta1", Resource: "stacks"}).Namespace(*ns)
		l = func(o metav1.ListOptions) (krt.Object, error) { return c.List(ctx, o) }
		w = func(o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	default:
		fmt.Fprintln(os.Stderr, "unknown kind", *kind)
		os.Exit(2)
	}
	if *drop {
		l, w = dropManagedFields(l, w)
	}
	sel := *selector
	lw := &cache.ListWatch{
		ListFunc:  func(o metav1.ListOptions) (krt.Object, error) { o.LabelSelector = sel; return l(o) },
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) { o.LabelSelector = sel; return w(o) },
	}
	// One request first, as the kstack side does: the connection's memory is not the cache's.
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runtime.GC()
	debug.FreeOSMemory()
	before := rssKiB()
	start := time.Now()
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	stop := make(chan struct{})
	go inf.Run(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		os.Exit(1)
	}
	synced := time.Since(start)
	n := len(inf.GetStore().ListKeys())
	rss, h := rssKiB(), heap()
	runtime.GC()
	debug.FreeOSMemory()
	rssGC, hGC := rssKiB(), heap()
	fmt.Printf("%d %d %d %d %d %d %.1f\n", n, before, rss, rssGC, h, hGC, float64(synced.Microseconds())/1000)
	runtime.KeepAlive(inf)
	close(stop)
}

// Command validate checks the manifests `protobench kube manifests` writes
// against the Kubernetes API types: every document is decoded strictly
// (unknown or misspelt fields, wrong types and malformed quantities are
// errors) into the official Go type of its kind from k8s.io/api, then the
// objects are checked against each other (the Indexed Job, its headless
// Service, the coordinator's agent addresses, the Secret and the volume).
//
// Usage: validate FILE [AGENTS]; exits 1 with every problem listed.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

type objects struct {
	secrets  map[string]*corev1.Secret
	services map[string]*corev1.Service
	jobs     map[string]*batchv1.Job
	claims   map[string]*corev1.PersistentVolumeClaim
}

func decode(docs [][]byte) (*objects, []string) {
	o := &objects{
		secrets:  map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{},
		jobs:     map[string]*batchv1.Job{},
		claims:   map[string]*corev1.PersistentVolumeClaim{},
	}
	var problems []string
	for i, doc := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			problems = append(problems, fmt.Sprintf("document %d: not YAML: %v", i, err))
			continue
		}
		var err error
		var meta *metav1.ObjectMeta
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Secret":
			var x corev1.Secret
			err = yaml.UnmarshalStrict(doc, &x)
			o.secrets[x.Name], meta = &x, &x.ObjectMeta
		case "v1 Service":
			var x corev1.Service
			err = yaml.UnmarshalStrict(doc, &x)
			o.services[x.Name], meta = &x, &x.ObjectMeta
		case "batch/v1 Job":
			var x batchv1.Job
			err = yaml.UnmarshalStrict(doc, &x)
			o.jobs[x.Name], meta = &x, &x.ObjectMeta
		case "v1 PersistentVolumeClaim":
			var x corev1.PersistentVolumeClaim
			err = yaml.UnmarshalStrict(doc, &x)
			o.claims[x.Name], meta = &x, &x.ObjectMeta
		default:
			problems = append(problems, fmt.Sprintf("document %d: unexpected %s %s", i, tm.APIVersion, tm.Kind))
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("document %d (%s): strict decode: %v", i, tm.Kind, err))
			continue
		}
		for _, e := range validation.IsDNS1123Label(meta.Name) {
			problems = append(problems, fmt.Sprintf("%s %q: name: %s", tm.Kind, meta.Name, e))
		}
		if meta.Namespace == "" {
			problems = append(problems, fmt.Sprintf("%s %q: no namespace", tm.Kind, meta.Name))
		}
	}
	return o, problems
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func checkPod(job string, spec *corev1.PodSpec, o *objects) []string {
	var problems []string
	if spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		problems = append(problems, fmt.Sprintf("job %s: restartPolicy %q: a Job needs Never or OnFailure", job, spec.RestartPolicy))
	}
	for _, c := range spec.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if !hasReq || !hasLim {
				problems = append(problems, fmt.Sprintf("job %s container %s: %s request and limit expected", job, c.Name, r))
			} else if req.Cmp(lim) > 0 {
				problems = append(problems, fmt.Sprintf("job %s container %s: %s request above its limit", job, c.Name, r))
			}
		}
		if c.Image == "" {
			problems = append(problems, fmt.Sprintf("job %s container %s: no image", job, c.Name))
		}
		for _, e := range c.Env {
			if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
				s, ok := o.secrets[ref.SecretKeyRef.Name]
				if !ok {
					problems = append(problems, fmt.Sprintf("job %s: env %s: no Secret %q", job, e.Name, ref.SecretKeyRef.Name))
				} else if _, ok := s.StringData[ref.SecretKeyRef.Key]; !ok {
					problems = append(problems, fmt.Sprintf("job %s: env %s: Secret %q has no key %q", job, e.Name, s.Name, ref.SecretKeyRef.Key))
				}
			}
		}
	}
	// Secret volumes: the Secret exists, and every file a container's
	// arguments name under the volume's mount is one of its keys.
	secretOf := map[string]*corev1.Secret{}
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			if _, ok := o.claims[v.PersistentVolumeClaim.ClaimName]; !ok {
				problems = append(problems, fmt.Sprintf("job %s: volume %s: no PersistentVolumeClaim %q", job, v.Name, v.PersistentVolumeClaim.ClaimName))
			}
		}
		if v.Secret != nil {
			s, ok := o.secrets[v.Secret.SecretName]
			if !ok {
				problems = append(problems, fmt.Sprintf("job %s: volume %s: no Secret %q", job, v.Name, v.Secret.SecretName))
			}
			secretOf[v.Name] = s
		}
	}
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			s := secretOf[m.Name]
			if s == nil {
				continue
			}
			for _, a := range c.Args {
				if key, ok := strings.CutPrefix(a, m.MountPath+"/"); ok {
					if _, has := s.StringData[key]; !has {
						problems = append(problems, fmt.Sprintf("job %s container %s: %s: Secret %q has no key %q", job, c.Name, a, s.Name, key))
					}
				}
			}
		}
	}
	return problems
}

// check applies the rules between objects; agents < 0 = any count.
func check(o *objects, agents int) []string {
	var problems []string
	var indexed, coordinator *batchv1.Job
	for _, j := range o.jobs {
		if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
			if indexed != nil {
				problems = append(problems, "more than one Indexed Job")
			}
			indexed = j
		} else {
			coordinator = j
		}
		problems = append(problems, checkPod(j.Name, &j.Spec.Template.Spec, o)...)
	}
	if indexed == nil || coordinator == nil {
		return append(problems, "expected an Indexed Job of agents and a coordinator Job")
	}
	n := int(*indexed.Spec.Completions)
	if indexed.Spec.Parallelism == nil || int(*indexed.Spec.Parallelism) != n {
		problems = append(problems, "agents: parallelism must equal completions (every agent runs at once)")
	}
	if agents >= 0 && n != agents {
		problems = append(problems, fmt.Sprintf("agents: %d completions, %d expected", n, agents))
	}
	svc, ok := o.services[indexed.Spec.Template.Spec.Subdomain]
	if !ok {
		return append(problems, fmt.Sprintf("agents: subdomain %q names no Service", indexed.Spec.Template.Spec.Subdomain))
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		problems = append(problems, fmt.Sprintf("service %s: clusterIP %q: a headless Service (None) gives each agent its DNS name", svc.Name, svc.Spec.ClusterIP))
	}
	if !selects(svc.Spec.Selector, indexed.Spec.Template.Labels) {
		problems = append(problems, fmt.Sprintf("service %s: its selector does not select the agents' pods", svc.Name))
	}
	if selects(svc.Spec.Selector, coordinator.Spec.Template.Labels) {
		problems = append(problems, fmt.Sprintf("service %s: its selector also selects the coordinator", svc.Name))
	}
	if len(svc.Spec.Ports) != 1 {
		return append(problems, fmt.Sprintf("service %s: one port expected", svc.Name))
	}
	port := svc.Spec.Ports[0].Port
	// The coordinator must name agent i as <job>-<i>.<service>.<namespace>.svc:<port>.
	args := coordinator.Spec.Template.Spec.Containers[0].Args
	var list string
	for i, a := range args {
		if a == "--agents" && i+1 < len(args) {
			list = args[i+1]
		}
	}
	got := strings.Split(list, ",")
	if len(got) != n {
		problems = append(problems, fmt.Sprintf("coordinator: --agents lists %d addresses for %d agents", len(got), n))
	}
	for i, a := range got {
		want := indexed.Name + "-" + strconv.Itoa(i) + "." + svc.Name + "." + indexed.Namespace + ".svc:" + strconv.Itoa(int(port))
		if a != want {
			problems = append(problems, fmt.Sprintf("coordinator: agent %d is %q, expected %q", i, a, want))
		}
	}
	agentArgs := strings.Join(indexed.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(agentArgs, ":"+strconv.Itoa(int(port))) {
		problems = append(problems, fmt.Sprintf("agents: %q do not listen on the Service's port %d", agentArgs, port))
	}
	return problems
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: validate FILE [AGENTS]")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	agents := -1
	if len(os.Args) > 2 {
		agents, _ = strconv.Atoi(os.Args[2])
	}
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		var content bool
		for _, l := range strings.Split(string(d), "\n") {
			t := strings.TrimSpace(l)
			if t != "" && !strings.HasPrefix(t, "#") && t != "---" {
				content = true
			}
		}
		if content {
			docs = append(docs, d)
		}
	}
	o, problems := decode(docs)
	if len(problems) == 0 {
		problems = check(o, agents)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Println("invalid:", p)
		}
		os.Exit(1)
	}
	fmt.Printf("valid: %d objects (%d agents), strict decode with k8s.io/api\n", len(docs), *o.jobsIndexed().Spec.Completions)
}

func (o *objects) jobsIndexed() *batchv1.Job {
	for _, j := range o.jobs {
		if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
			return j
		}
	}
	return nil
}

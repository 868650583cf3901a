package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func getSchedule(g Gomega, key types.NamespacedName) *echov1alpha1.EchoBackupSchedule {
	s := &echov1alpha1.EchoBackupSchedule{}
	g.Expect(k8sClient.Get(context.Background(), key, s)).To(Succeed())
	return s
}

func scheduledBackups(g Gomega, key types.NamespacedName) []echov1alpha1.EchoBackup {
	list := &echov1alpha1.EchoBackupList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(key.Namespace),
		client.MatchingLabels{echov1alpha1.ScheduleLabel: key.Name})).To(Succeed())
	return list.Items
}

// markBackupComplete plays a finished data mover Job.
func markBackupComplete(t *testing.T, b echov1alpha1.EchoBackup) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &echov1alpha1.EchoBackup{}
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(&b), latest); err != nil {
			return err
		}
		meta.SetStatusCondition(&latest.Status.Conditions, metav1.Condition{
			Type: echov1alpha1.BackupConditionComplete, Status: metav1.ConditionTrue, Reason: "Completed", Message: "test"})
		latest.Status.CompletionTime = ptr.To(metav1.Now())
		return k8sClient.Status().Update(context.Background(), latest)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEchoBackupScheduleRunsOnItsClock(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "web"))
	key := types.NamespacedName{Namespace: ns, Name: "hourly"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: echov1alpha1.EchoBackupScheduleSpec{
			Schedule:  "@every 1h",
			Retention: &echov1alpha1.RetentionPolicy{KeepLast: ptr.To[int32](2)},
			Template:  newBackup(ns, "unused", "web").Spec,
		},
	})).To(Succeed())

	Eventually(func(g Gomega) {
		s := getSchedule(g, key)
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, echov1alpha1.ScheduleConditionReady)).To(BeTrue())
		g.Expect(s.Status.NextScheduleTime).NotTo(BeNil())
		g.Expect(s.Status.LastScheduleTime).To(BeNil())
	}, timeout, interval).Should(Succeed())
	Expect(scheduledBackups(Default, key)).To(BeEmpty(), "nothing runs before the first run time")

	t.Run("a run time starts one backup", func(t *testing.T) {
		RegisterTestingT(t)
		advanceAndPoke(t, &echov1alpha1.EchoBackupSchedule{}, key, time.Hour+time.Second)
		Eventually(func(g Gomega) {
			g.Expect(scheduledBackups(g, key)).To(HaveLen(1))
			s := getSchedule(g, key)
			g.Expect(s.Status.LastScheduleTime).NotTo(BeNil())
			g.Expect(s.Status.NextScheduleTime.After(s.Status.LastScheduleTime.Time)).To(BeTrue())
		}, timeout, interval).Should(Succeed())
		b := scheduledBackups(Default, key)[0]
		Expect(b.Spec.EchoName).To(Equal("web"))
		Eventually(func(g Gomega) {
			next := getEcho(g, types.NamespacedName{Namespace: ns, Name: "web"}).Status.NextScheduledBackup
			g.Expect(next).NotTo(BeNil(), "the Echo says when it is backed up next")
			g.Expect(next.Schedule).To(Equal(key.Name))
			g.Expect(next.Time.Equal(getSchedule(g, key).Status.NextScheduleTime)).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("missed run times collapse into one backup", func(t *testing.T) {
		RegisterTestingT(t)
		advanceAndPoke(t, &echov1alpha1.EchoBackupSchedule{}, key, 5*time.Hour)
		Eventually(func(g Gomega) []echov1alpha1.EchoBackup { return scheduledBackups(g, key) }, timeout, interval).Should(HaveLen(2))
		Consistently(func(g Gomega) []echov1alpha1.EchoBackup { return scheduledBackups(g, key) }, "500ms", interval).Should(HaveLen(2))
	})

	t.Run("retention prunes beyond keepLast", func(t *testing.T) {
		RegisterTestingT(t)
		for _, b := range scheduledBackups(Default, key) {
			markBackupComplete(t, b)
		}
		advanceAndPoke(t, &echov1alpha1.EchoBackupSchedule{}, key, time.Hour)
		Eventually(func(g Gomega) []echov1alpha1.EchoBackup { return scheduledBackups(g, key) }, timeout, interval).
			Should(HaveLen(3), "a running backup is not counted, nor pruned")
		for _, b := range scheduledBackups(Default, key) {
			markBackupComplete(t, b)
		}
		Eventually(func(g Gomega) {
			backups := scheduledBackups(g, key)
			g.Expect(backups).To(HaveLen(2), "the oldest of three finished backups is pruned")
			s := getSchedule(g, key)
			g.Expect(s.Status.LastSuccessfulBackup).NotTo(BeEmpty())
			g.Expect(backups).To(ContainElement(HaveField("Name", s.Status.LastSuccessfulBackup)))
			last := getEcho(g, types.NamespacedName{Namespace: ns, Name: "web"}).Status.LastSuccessfulBackup
			g.Expect(last).NotTo(BeNil(), "the Echo says when it was last backed up")
			g.Expect(backups).To(ContainElement(HaveField("Name", last.Name)))
			for _, b := range backups {
				g.Expect(b.Status.CompletionTime.After(last.CompletionTime.Time)).To(BeFalse(), "%s completed after %s", b.Name, last.Name)
				if b.Name == last.Name {
					g.Expect(last.CompletionTime.Equal(b.Status.CompletionTime)).To(BeTrue())
				}
			}
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
			Should(ContainElements(echov1alpha1.EventReasonScheduledBackup, echov1alpha1.EventReasonPrunedBackup))
	})

	t.Run("a suspended schedule starts nothing", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := getSchedule(Default, key)
			s.Spec.Suspend = true
			return k8sClient.Update(ctx, s)
		})).To(Succeed())
		before := len(scheduledBackups(Default, key))
		advanceAndPoke(t, &echov1alpha1.EchoBackupSchedule{}, key, 3*time.Hour)
		Eventually(func(g Gomega) string {
			c := meta.FindStatusCondition(getSchedule(g, key).Status.Conditions, echov1alpha1.ScheduleConditionReady)
			g.Expect(c).NotTo(BeNil())
			return c.Reason
		}, timeout, interval).Should(Equal(echov1alpha1.ScheduleReasonSuspended))
		Consistently(func(g Gomega) []echov1alpha1.EchoBackup { return scheduledBackups(g, key) }, "500ms", interval).Should(HaveLen(before))
		Eventually(func(g Gomega) *echov1alpha1.ScheduledBackup {
			return getEcho(g, types.NamespacedName{Namespace: ns, Name: "web"}).Status.NextScheduledBackup
		}, timeout, interval).Should(BeNil(), "a suspended schedule runs nothing next")
	})

	t.Run("a request starts one backup now, even while suspended", func(t *testing.T) {
		RegisterTestingT(t)
		before := scheduledBackups(Default, key)
		requestBackupNow(t, key)
		var requested echov1alpha1.EchoBackup
		Eventually(func(g Gomega) {
			backups := scheduledBackups(g, key)
			g.Expect(backups).To(HaveLen(len(before) + 1))
			for _, b := range backups {
				if strings.HasPrefix(b.Name, key.Name+"-now-") {
					requested = b
				}
			}
			g.Expect(requested.Name).NotTo(BeEmpty())
			g.Expect(getSchedule(g, key).Annotations).NotTo(HaveKey(echov1alpha1.BackupNowAnnotation), "a request is honoured once")
		}, timeout, interval).Should(Succeed())
		Expect(requested.Spec.EchoName).To(Equal("web"))
		Expect(requested.Annotations).To(HaveKey(echov1alpha1.ScheduledAtAnnotation), "retention orders it with the others")
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonBackupRequested))
		advanceAndPoke(t, &echov1alpha1.EchoBackupSchedule{}, key, time.Minute)
		Consistently(func(g Gomega) []echov1alpha1.EchoBackup { return scheduledBackups(g, key) }, "500ms", interval).
			Should(HaveLen(len(before)+1), "a request honoured is not honoured again")

		requestBackupNow(t, key)
		Eventually(func(g Gomega) []echov1alpha1.EchoBackup { return scheduledBackups(g, key) }, timeout, interval).
			Should(HaveLen(len(before)+2), "the same request made again is a new one")
	})
}

// requestBackupNow asks a schedule for a backup now, as the docs show:
// kubectl annotate echobackupschedule NAME echo.dev/backup-now=<time> --overwrite.
func requestBackupNow(t *testing.T, key types.NamespacedName) {
	t.Helper()
	annotateSchedule(t, key, echov1alpha1.BackupNowAnnotation, "now")
}

// annotateSchedule sets an annotation of the schedule, as kubectl annotate
// --overwrite does.
func annotateSchedule(t *testing.T, key types.NamespacedName, annotation, value string) {
	t.Helper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := getSchedule(Default, key)
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annotation] = value
		return k8sClient.Update(context.Background(), s)
	})).To(Succeed())
}

func TestEchoBackupScheduleReportsAnInvalidSchedule(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	for name, spec := range map[string]echov1alpha1.EchoBackupScheduleSpec{
		"bad-hour": {Schedule: "0 25 * * *"},
		"bad-zone": {Schedule: "@daily", TimeZone: "Mars/Olympus_Mons"},
	} {
		spec.Template = newBackup(ns, "unused", "web").Spec
		Expect(k8sClient.Create(context.Background(), &echov1alpha1.EchoBackupSchedule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: name}
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getSchedule(g, key).Status.Conditions, echov1alpha1.ScheduleConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(echov1alpha1.ScheduleReasonInvalidSchedule))
			g.Expect(c.Message).To(ContainSubstring("fix spec.schedule or spec.timeZone"))
		}, timeout, interval).Should(Succeed(), name)
	}
}

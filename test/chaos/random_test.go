//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

const (
	// randomKillsFull and randomKillsFast are the kills of a full and of
	// a fast run.
	randomKillsFull = 30
	randomKillsFast = 3
	// The gap before each kill is drawn between these.
	minKillGap = 300 * time.Millisecond
	maxKillGap = 3 * time.Second
)

// randomSeed is CHAOS_SEED, or the clock.
func randomSeed(t *testing.T) uint64 {
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// randomKills runs a mixed workload under one manager that is SIGKILLed
// at seeded random times, and checks that everything converges.
func randomKills(t *testing.T, env *s3Env) {
	seed := randomSeed(t)
	t.Logf("seed %d (replay with CHAOS_SEED=%d)", seed, seed)
	kills := randomKillsFast
	if fullRun {
		kills = randomKillsFull
	}
	ns, _, mgr := startInNamespace(t, env, "random")
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout+convergeTimeout)
	defer cancel()

	w := newWorkload(ns, env, rand.New(rand.NewPCG(seed, 1)))
	if err := w.prepare(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	killed := make(chan error, 1)
	go func() { killed <- killAtRandom(ctx, t, mgr, rand.New(rand.NewPCG(seed, 2)), kills, start) }()
	if err := w.drive(ctx); err != nil {
		t.Fatalf("workload: %v", err)
	}
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	tookStart := time.Now()
	convergeCtx, cancelConverge := context.WithTimeout(ctx, convergeTimeout)
	defer cancelConverge()
	if err := await(convergeCtx, func(ctx context.Context) error {
		if mgr.Exited() {
			return errors.New("the manager exited by itself")
		}
		return w.converged(ctx)
	}); err != nil {
		t.Fatalf("the mixed workload did not converge within %s after %d random kills: %v", convergeTimeout, kills, err)
	}
	took := time.Since(tookStart)
	line := fmt.Sprintf("random kills: %d kills, seed %d, converged %.1fs after the last kill (whole run %.0fs)",
		kills, seed, took.Seconds(), time.Since(start).Seconds())
	t.Log(line)
	book.addRandom(line)
}

// killAtRandom kills and restarts the manager n times, each after a gap
// drawn from rng.
func killAtRandom(ctx context.Context, t *testing.T, mgr *managerProcess, rng *rand.Rand, n int, start time.Time) error {
	for i := range n {
		gap := minKillGap + time.Duration(rng.Int64N(int64(maxKillGap-minKillGap)))
		timer := time.NewTimer(gap)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("kill %d of %d: %w", i+1, n, ctx.Err())
		case <-timer.C:
		}
		if err := mgr.KillAndRestart(); err != nil {
			return fmt.Errorf("kill %d of %d: %w", i+1, n, err)
		}
		t.Logf("kill %d of %d at %.1fs", i+1, n, time.Since(start).Seconds())
	}
	return nil
}

// workload is the mixed workload of the random kills: plain Echoes created,
// updated and one deleted; Echoes with data backed up, one restored in
// place and one into a new Echo, a backup with its artifact deleted, and
// an Echo deleted after its final backup.
type workload struct {
	ns  string
	env *s3Env
	rng *rand.Rand

	mu     sync.Mutex
	data   map[string]map[string][]byte // the data of an Echo when backed up
	alive  []string
	gone   []string
	stored map[string]string // backup name -> Echo whose data it holds
}

const (
	plainEchoes  = 4
	dataEchoes   = 2
	finalEcho    = "final"
	cloneEcho    = "clone"
	inPlaceName  = "r-inplace"
	cloneRestore = "r-clone"
)

func newWorkload(ns string, env *s3Env, rng *rand.Rand) *workload {
	return &workload{ns: ns, env: env, rng: rng, data: map[string]map[string][]byte{}, stored: map[string]string{}}
}

func (w *workload) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: w.ns, Name: name}
}

// prepare writes the data of the Echoes that keep some, before they exist.
func (w *workload) prepare() error {
	for _, name := range []string{"data-0", "data-1", finalEcho} {
		files, err := writeJournal(w.ns, chart.DataClaimName(name), name+"-0", 10+w.rng.IntN(20))
		if err != nil {
			return err
		}
		w.data[name] = files
	}
	return nil
}

// drive runs the workload's strands at once and waits for them.
func (w *workload) drive(ctx context.Context) error {
	strands := []func(context.Context) error{w.plainStrand, w.inPlaceStrand, w.cloneStrand, w.finalStrand}
	errs := make(chan error, len(strands))
	for _, s := range strands {
		go func() { errs <- s(ctx) }()
	}
	var all []error
	for range strands {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// pause waits a random moment between steps, so that the strands
// interleave differently with each seed.
func (w *workload) pause(ctx context.Context) {
	w.mu.Lock()
	d := time.Duration(w.rng.Int64N(int64(time.Second)))
	w.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

func (w *workload) note(alive, gone string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if alive != "" {
		w.alive = append(w.alive, alive)
	}
	if gone != "" {
		w.gone = append(w.gone, gone)
	}
}

// plainStrand creates the plain Echoes, updates them and deletes the last.
func (w *workload) plainStrand(ctx context.Context) error {
	for i := range plainEchoes {
		name := fmt.Sprintf("web-%d", i)
		if err := k8sClient.Create(ctx, &echov1alpha1.Echo{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
			Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](int32(1 + i%2))},
		}); err != nil {
			return err
		}
		w.pause(ctx)
	}
	for round := range 2 {
		for i := range plainEchoes - 1 {
			if err := updateEcho(ctx, w.key(fmt.Sprintf("web-%d", i)), func(e *echov1alpha1.Echo) {
				e.Spec.Message = fmt.Sprintf("round %d", round)
			}); err != nil {
				return err
			}
			w.pause(ctx)
		}
	}
	for i := range plainEchoes - 1 {
		w.note(fmt.Sprintf("web-%d", i), "")
	}
	last := fmt.Sprintf("web-%d", plainEchoes-1)
	w.note("", last)
	return k8sClient.Delete(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: last}})
}

func (w *workload) createDataEcho(ctx context.Context, name string, policy *echov1alpha1.EchoBackupPolicy) error {
	return k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: echov1alpha1.EchoSpec{
			Replicas: ptr.To[int32](1), Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}, Backup: policy,
		},
	})
}

// backUp backs an Echo up and waits until the backup completes.
func (w *workload) backUp(ctx context.Context, name, echoName string, policy echov1alpha1.DeletionPolicy) error {
	if err := k8sClient.Create(ctx, &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec:       echov1alpha1.EchoBackupSpec{EchoName: echoName, Storage: w.env.storage(), DeletionPolicy: policy},
	}); err != nil {
		return err
	}
	w.mu.Lock()
	w.stored[name] = echoName
	w.mu.Unlock()
	return await(ctx, func(ctx context.Context) error {
		_, err := backupComplete(ctx, w.key(name))
		return err
	})
}

// inPlaceStrand backs data-0 up, changes its data, and restores the
// backup in place.
func (w *workload) inPlaceStrand(ctx context.Context) error {
	if err := w.createDataEcho(ctx, "data-0", nil); err != nil {
		return err
	}
	w.pause(ctx)
	if err := w.backUp(ctx, "b-data-0", "data-0", echov1alpha1.DeletionPolicyRetain); err != nil {
		return err
	}
	later := filepath.Join(claimDir(w.ns, chart.DataClaimName("data-0")), "journal", "later.jsonl")
	if err := os.WriteFile(later, []byte("{\"seq\":1}\n"), 0o600); err != nil {
		return err
	}
	w.pause(ctx)
	w.note("data-0", "")
	return k8sClient.Create(ctx, &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: inPlaceName},
		Spec: echov1alpha1.EchoRestoreSpec{
			Source: echov1alpha1.RestoreSource{BackupName: "b-data-0"}, ExistingData: echov1alpha1.ExistingDataReplace,
		},
	})
}

// cloneStrand backs data-1 up with deletionPolicy Delete, restores the
// backup into a new Echo and, once that is done, deletes the backup and
// its artifact.
func (w *workload) cloneStrand(ctx context.Context) error {
	if err := w.createDataEcho(ctx, "data-1", nil); err != nil {
		return err
	}
	w.pause(ctx)
	if err := w.backUp(ctx, "b-data-1", "data-1", echov1alpha1.DeletionPolicyDelete); err != nil {
		return err
	}
	w.pause(ctx)
	if err := k8sClient.Create(ctx, &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: cloneRestore},
		Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "b-data-1"}, EchoName: cloneEcho},
	}); err != nil {
		return err
	}
	w.mu.Lock()
	w.data[cloneEcho] = w.data["data-1"]
	w.mu.Unlock()
	w.note("data-1", "")
	w.note(cloneEcho, "")
	if err := await(ctx, func(ctx context.Context) error {
		_, err := restoreComplete(ctx, w.key(cloneRestore))
		return err
	}); err != nil {
		return err
	}
	w.mu.Lock()
	delete(w.stored, "b-data-1")
	w.mu.Unlock()
	return k8sClient.Delete(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "b-data-1"}})
}

// finalStrand creates an Echo with a final backup policy and deletes it
// once it is Ready.
func (w *workload) finalStrand(ctx context.Context) error {
	storage := w.env.storage()
	if err := w.createDataEcho(ctx, finalEcho, &echov1alpha1.EchoBackupPolicy{
		BeforeDelete: &echov1alpha1.FinalBackupSpec{Enabled: true, Storage: &storage},
	}); err != nil {
		return err
	}
	if err := await(ctx, func(ctx context.Context) error {
		return echoReady(ctx, w.key(finalEcho))
	}); err != nil {
		return err
	}
	w.pause(ctx)
	w.note("", finalEcho)
	return k8sClient.Delete(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: finalEcho}})
}

// converged checks the end state of the workload.
func (w *workload) converged(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range w.alive {
		if err := echoReady(ctx, w.key(name)); err != nil {
			return err
		}
	}
	for _, name := range w.gone {
		if err := echoGone(ctx, w.key(name)); err != nil {
			return err
		}
	}
	for _, rs := range []string{inPlaceName, cloneRestore} {
		if _, err := restoreComplete(ctx, w.key(rs)); err != nil {
			return err
		}
	}
	for _, name := range []string{"data-0", cloneEcho} {
		if err := claimHolds(w.ns, chart.DataClaimName(name), w.data[name]); err != nil {
			return err
		}
	}
	if err := w.backupsHold(ctx); err != nil {
		return err
	}
	return namespaceClean(ctx, w.env, w.ns)
}

// backupsHold checks every backup that must still exist, the final one
// included, against the data it was taken of.
func (w *workload) backupsHold(ctx context.Context) error {
	finals := &echov1alpha1.EchoBackupList{}
	if err := k8sClient.List(ctx, finals, client.InNamespace(w.ns), client.MatchingLabels{echov1alpha1.FinalBackupOfLabel: finalEcho}); err != nil {
		return err
	}
	if len(finals.Items) != 1 {
		return fmt.Errorf("%d final backups of %s, want 1", len(finals.Items), finalEcho)
	}
	stored := map[string]string{finals.Items[0].Name: finalEcho}
	for b, e := range w.stored {
		stored[b] = e
	}
	for name, echoName := range stored {
		b, err := backupComplete(ctx, w.key(name))
		if err != nil {
			return err
		}
		if err := artifactHolds(ctx, w.env, b, w.data[echoName]); err != nil {
			return err
		}
	}
	return nil
}

// Command classscheduling is FoundationDB's class-scheduling tutorial
// written for caskade: students sign up for classes and drop them, with
// seat counts and a per-student limit kept exactly right by serializable
// transactions, keys encoded with the tuple layer and kept apart with a
// subspace.
//
//	go run ./examples/classscheduling -students 10 -ops 10
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/subspace"
	"github.com/caskade/caskade/tuple"
)

// The data model: in the "scheduling" subspace,
//
//	("class", name)            -> seats left, as a decimal string
//	("attends", student, name) -> ""
var (
	scheduling = subspace.Sub("scheduling")
	course     = scheduling.Sub("class")
	attends    = scheduling.Sub("attends")
)

// Errors a sign-up can meet; they end the transaction without retry.
var (
	ErrNoSeats     = errors.New("no remaining seats")
	ErrTooMany     = errors.New("too many classes")
	ErrNoSuchClass = errors.New("no such class")
)

// MaxClasses is how many classes one student may attend.
const MaxClasses = 5

// Seats is how many seats each class has.
const Seats = 100

// ClassNames are the tutorial's classes: every level of every subject at
// every time.
func ClassNames() []string {
	levels := []string{"intro", "for dummies", "remedial", "101", "201", "301", "mastery", "lab", "seminar"}
	types := []string{"chem", "bio", "cs", "geometry", "calc", "alg", "film", "music", "art", "dance"}
	var names []string
	for h := 2; h <= 19; h++ {
		for _, t := range types {
			for _, l := range levels {
				names = append(names, fmt.Sprintf("%d:00 %s %s", h, t, l))
			}
		}
	}
	return names
}

// Init clears the scheduling data and opens every class with Seats seats.
func Init(ctx context.Context, db *caskade.DB, classes []string) error {
	return db.Transact(ctx, func(tx *caskade.Tx) error {
		tx.ClearRange(scheduling.Range())
		for _, c := range classes {
			tx.Set(course.Pack(tuple.Tuple{c}), []byte(strconv.Itoa(Seats)))
		}
		return nil
	})
}

// AvailableClasses lists the classes with seats left.
func AvailableClasses(ctx context.Context, db *caskade.DB) ([]string, error) {
	var out []string
	err := db.ReadTransact(ctx, func(tx *caskade.Tx) error {
		out = out[:0]
		b, e := course.Range()
		kvs, err := tx.GetRange(caskade.FirstGreaterOrEqual(b), caskade.FirstGreaterOrEqual(e), nil)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			if n, _ := strconv.Atoi(string(kv.Value)); n > 0 {
				t, err := course.Unpack(kv.Key)
				if err != nil {
					return err
				}
				out = append(out, t[0].(string))
			}
		}
		return nil
	})
	return out, err
}

func signup(tx *caskade.Tx, student, class string) error {
	rec := attends.Pack(tuple.Tuple{student, class})
	if _, err := tx.Get(rec); err == nil {
		return nil // already signed up
	} else if !errors.Is(err, caskade.ErrNotFound) {
		return err
	}
	seatsKey := course.Pack(tuple.Tuple{class})
	v, err := tx.Get(seatsKey)
	if errors.Is(err, caskade.ErrNotFound) {
		return ErrNoSuchClass
	}
	if err != nil {
		return err
	}
	seats, err := strconv.Atoi(string(v))
	if err != nil {
		return err
	}
	if seats == 0 {
		return ErrNoSeats
	}
	b, e := attends.Sub(student).Range()
	mine, err := tx.GetRange(caskade.FirstGreaterOrEqual(b), caskade.FirstGreaterOrEqual(e), &caskade.RangeOptions{KeysOnly: true})
	if err != nil {
		return err
	}
	if len(mine) >= MaxClasses {
		return ErrTooMany
	}
	tx.Set(seatsKey, []byte(strconv.Itoa(seats-1)))
	tx.Set(rec, nil)
	return nil
}

func drop(tx *caskade.Tx, student, class string) error {
	rec := attends.Pack(tuple.Tuple{student, class})
	if _, err := tx.Get(rec); errors.Is(err, caskade.ErrNotFound) {
		return nil // not signed up
	} else if err != nil {
		return err
	}
	seatsKey := course.Pack(tuple.Tuple{class})
	v, err := tx.Get(seatsKey)
	if err != nil {
		return err
	}
	seats, err := strconv.Atoi(string(v))
	if err != nil {
		return err
	}
	tx.Set(seatsKey, []byte(strconv.Itoa(seats+1)))
	tx.Clear(rec)
	return nil
}

// Signup signs student up for class.
func Signup(ctx context.Context, db *caskade.DB, student, class string) error {
	return db.Transact(ctx, func(tx *caskade.Tx) error { return signup(tx, student, class) })
}

// Drop drops student from class.
func Drop(ctx context.Context, db *caskade.DB, student, class string) error {
	return db.Transact(ctx, func(tx *caskade.Tx) error { return drop(tx, student, class) })
}

// Switch moves student from one class to another, all or nothing.
func Switch(ctx context.Context, db *caskade.DB, student, from, to string) error {
	return db.Transact(ctx, func(tx *caskade.Tx) error {
		if err := drop(tx, student, from); err != nil {
			return err
		}
		return signup(tx, student, to)
	})
}

// Simulate runs students concurrently, each doing ops random sign-ups,
// drops and switches, as the tutorial's simulation does.
func Simulate(ctx context.Context, db *caskade.DB, classes []string, students, ops int, seed uint64) error {
	var wg sync.WaitGroup
	errs := make(chan error, students)
	for s := range students {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(s)))
			id := fmt.Sprintf("s%d", s)
			var mine []string
			for range ops {
				var err error
				switch mood := r.IntN(3); {
				case mood == 0 && len(mine) > 0:
					i := r.IntN(len(mine))
					err = Drop(ctx, db, id, mine[i])
					mine = append(mine[:i], mine[i+1:]...)
				case mood == 1 && len(mine) > 0:
					i := r.IntN(len(mine))
					to := classes[r.IntN(len(classes))]
					err = Switch(ctx, db, id, mine[i], to)
					if err == nil {
						mine[i] = to
					}
				default:
					c := classes[r.IntN(len(classes))]
					err = Signup(ctx, db, id, c)
					if err == nil {
						mine = append(mine, c)
					}
				}
				if err != nil && !errors.Is(err, ErrNoSeats) && !errors.Is(err, ErrTooMany) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func main() {
	dir := flag.String("dir", "", "database directory (default: a temporary one)")
	students := flag.Int("students", 10, "concurrent students")
	ops := flag.Int("ops", 10, "actions per student")
	flag.Parse()
	if *dir == "" {
		d, err := os.MkdirTemp("", "classscheduling")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	db, err := caskade.Open(*dir, &caskade.Options{Sync: caskade.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	classes := ClassNames()
	if err := Init(ctx, db, classes); err != nil {
		log.Fatal(err)
	}
	if err := Simulate(ctx, db, classes, *students, *ops, rand.Uint64()); err != nil {
		log.Fatal(err)
	}
	avail, err := AvailableClasses(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d students did %d actions each; %d of %d classes have seats left\n", *students, *ops, len(avail), len(classes))
}

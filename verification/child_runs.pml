/* A Promela model of child runs (router_service/children/child_group.cc, docs/CHILD_RUNS.md):
 * a root run that may open parallel groups of children, children that may open a group of
 * one grandchild (one level of nesting), budgets carved from the parent, cancel and deadline
 * cascades, pauses and reviews, and children ending with any terminal reason at any moment.
 * Checked by child_check.sh (//verification:child_check_test); README.md, "Child runs".
 *
 * Runs: 0 the root; 1 and 2 its children; 3 the child of 1, 4 the child of 2.
 * M = the root's max_iterations, D = the deadline in ticks (a child's is the parent's).
 */

#ifndef M
#define M 4
#endif
#ifndef D
#define D 2
#endif
#ifndef CANCELS
#define CANCELS 1
#endif

#define NONE 0
#define WORK 1       /* PLANNING, DECIDING, EXECUTING, EVALUATING: one step = one iteration */
#define WAITING 2
#define PAUSED 3
#define FINISHED 4
#define FAILED 5
#define CANCELLED 6

#define N 7  /* runs 0..4; 5 and 6 only pad KID() of a grandchild, never used */
#define KID(r, i) ((r) == 0 -> 1 + (i) : (r) + 2)
#define MAXKIDS(r) ((r) == 0 -> 2 : ((r) <= 2 -> 1 : 0))
#define terminal(r) (stage[r] >= FINISHED)
#define live(r) (stage[r] != NONE && !terminal(r))
#define KID_ENDED(r, i) (kids[r] <= (i) || terminal(KID(r, i)))
#define ALL_KIDS_ENDED(r) (KID_ENDED(r, 0) && KID_ENDED(r, 1))
#define KID_TO_CANCEL(r, i) (kids[r] > (i) && !terminal(KID(r, i)) && !cancel_req[KID(r, i)])
#define MUST_CANCEL(r) (cancel_req[r] || now >= D)
#define SOME_PAUSED (stage[0] == PAUSED || stage[1] == PAUSED || stage[2] == PAUSED || \
                     stage[3] == PAUSED || stage[4] == PAUSED)

byte stage[N];
byte iter[N];
byte limit[N];
bool cancel_req[N];
byte kids[N];   /* the size of the run's current (or last) group */
byte now;       /* ticks, 0..D */
byte cancels;   /* cancels a person made so far */
byte tree_work; /* ghost: iterations worked by every run of the tree */

/* A run ends: none of its children may outlive it. */
inline terminate(r, s) {
  assert(ALL_KIDS_ENDED(r));
  stage[r] = s;
}

/* OpenGroup: k children, each with an equal share of the iterations the parent has left. */
inline open_group(r, k) {
  kids[r] = k;
  c = KID(r, 0);
  stage[c] = WORK; iter[c] = 0; limit[c] = (limit[r] - iter[r]) / k; cancel_req[c] = false;
  kids[c] = 0;
  if
  :: k == 2 ->
     c = KID(r, 1);
     stage[c] = WORK; iter[c] = 0; limit[c] = (limit[r] - iter[r]) / k; cancel_req[c] = false;
     kids[c] = 0
  :: else -> skip
  fi;
  stage[r] = WAITING
}

/* One step of run r (StageRouter for it, as the engine drives it). */
inline step(r) {
  if
  :: stage[r] == WORK ->
     if
     :: cancel_req[r] -> terminate(r, CANCELLED)
     :: !cancel_req[r] && now >= D -> terminate(r, FAILED)
     :: !cancel_req[r] && now < D && iter[r] >= limit[r] -> terminate(r, FAILED)
     :: !cancel_req[r] && now < D && iter[r] < limit[r] ->
        iter[r]++;
        tree_work++;
        assert(tree_work <= M);  /* the whole tree within the root's max_iterations */
        if
        :: skip
        :: terminate(r, FINISHED)
        :: terminate(r, FAILED)
        :: stage[r] = PAUSED
        :: MAXKIDS(r) >= 1 && limit[r] - iter[r] >= 1 -> open_group(r, 1)
        :: MAXKIDS(r) >= 2 && limit[r] - iter[r] >= 2 -> open_group(r, 2)
        fi
     fi
  :: stage[r] == PAUSED ->
     if
     :: now >= D -> terminate(r, FAILED)
     :: now < D -> stage[r] = WORK  /* a review */
     fi
  :: stage[r] == WAITING && MUST_CANCEL(r) && !ALL_KIDS_ENDED(r) ->
     /* The cascade: every live child is cancelled (a paused one ends at once). */
     c = KID(r, 0);
     if
     :: kids[r] > 0 && stage[c] == PAUSED -> terminate(c, CANCELLED)
     :: kids[r] > 0 && live(c) && stage[c] != PAUSED -> cancel_req[c] = true
     :: else -> skip
     fi;
     c = KID(r, 1);
     if
     :: kids[r] > 1 && stage[c] == PAUSED -> terminate(c, CANCELLED)
     :: kids[r] > 1 && live(c) && stage[c] != PAUSED -> cancel_req[c] = true
     :: else -> skip
     fi
  :: stage[r] == WAITING && ALL_KIDS_ENDED(r) ->
     /* The join: the children's iterations are added to the parent's. */
     iter[r] = iter[r] + iter[KID(r, 0)] + (kids[r] > 1 -> iter[KID(r, 1)] : 0);
     assert(iter[r] <= limit[r]);  /* carved, never added */
     if
     :: cancel_req[r] -> terminate(r, CANCELLED)
     :: !cancel_req[r] && now >= D -> terminate(r, FAILED)
     :: !cancel_req[r] && now < D -> stage[r] = WORK
     :: !cancel_req[r] && now < D -> terminate(r, FINISHED)
     fi
  fi
}

#define CAN_STEP(r) (stage[r] == WORK || stage[r] == PAUSED || \
                     (stage[r] == WAITING && (ALL_KIDS_ENDED(r) || \
                      (MUST_CANCEL(r) && (KID_TO_CANCEL(r, 0) || KID_TO_CANCEL(r, 1))))))

/* A person cancels run r: a paused run ends at once, any other records the cancel. */
inline cancel(r) {
  if
  :: stage[r] == PAUSED -> terminate(r, CANCELLED)
  :: else -> cancel_req[r] = true
  fi;
  cancels++
}

#define CAN_CANCEL(r) (cancels < CANCELS && live(r) && !cancel_req[r])

active proctype driver() {
  byte c;
  stage[0] = WORK;
  limit[0] = M;
  do
  :: atomic { CAN_STEP(0) -> step(0) }
  :: atomic { CAN_STEP(1) -> step(1) }
  :: atomic { CAN_STEP(2) -> step(2) }
  :: atomic { CAN_STEP(3) -> step(3) }
  :: atomic { CAN_STEP(4) -> step(4) }
  :: atomic { now < D -> now++ }
  :: atomic { CAN_CANCEL(0) -> cancel(0) }
  :: atomic { CAN_CANCEL(1) -> cancel(1) }
  :: atomic { CAN_CANCEL(3) -> cancel(3) }
  :: terminal(0) -> break
  od;
  /* The root ended: so did every run of the tree. */
  assert(!live(1) && !live(2) && !live(3) && !live(4))
}

/* The root always ends or waits for a person somewhere in its tree. */
ltl comes_to_rest { [] <> (stage[0] >= FINISHED || SOME_PAUSED) }
/* A cancel of the root ends it. */
ltl cancel_ends { [] (cancel_req[0] -> <> (stage[0] == CANCELLED)) }

/*
 * A model of rein's stage router (router_service/stage_router.cc, termination.cc) and of the
 * driver around it (run_engine.cc's Next loop), for spin. See verification/README.md for what
 * is modelled, what is abstracted and why that is sound, and the bound.
 *
 * One process plays the router and its whole environment: the planner's and the executor's
 * replies, reviews (two reviewers racing with versions), cancels, clock ticks and router
 * restarts are chosen nondeterministically at every step. Every commit is checked against
 * transitions.txt (through the generated table.pml) and against the properties below.
 *
 * Limits (set with spin -D...): M max_iterations, R retry_budget, W stagnation_window,
 * D the deadline in ticks (one tick = the shortest retry backoff), F max_consecutive_tool_failures,
 * C max_children, P max_parallel_children.
 *
 * Child runs (router_service/children/child_group.cc): a plan may delegate subtasks; a delegated
 * subtask on top of the stack opens a group (DECIDING -> WAITING) of one or two children, each
 * an abstract run that works, pauses (a person reviews it or not), ends with any terminal reason
 * at any moment, and may itself wait for one grandchild (one level of nesting); the parent's
 * cancel and deadline cascade to them, and the join adds their iterations and retries (within
 * their carved shares) and usage to the parent's.
 */

#ifndef M
#define M 3
#endif
#ifndef R
#define R 1
#endif
#ifndef W
#define W 2
#endif
#ifndef D
#define D 2
#endif
#ifndef F
#define F 2
#endif
#ifndef C
#define C 2 /* Limits.max_children */
#endif
#ifndef P
#define P 2 /* Limits.max_parallel_children */
#endif
#ifndef MAXPENDING
#define MAXPENDING 2 /* subtasks on the stack at once (a plan adds 1 or 2) */
#endif

/* rein.v1.Stage */
#define INITIALIZING 1
#define PLANNING 2
#define DECIDING 3
#define EXECUTING 4
#define EVALUATING 5
#define PAUSED 6
#define FINISHED 7
#define FAILED 8
#define CANCELLED 9
#define WAITING 10
#define terminal(s) ((s) >= FINISHED && (s) <= CANCELLED)

/* rein.v1.TerminationReason */
#define GOAL_ACHIEVED 1
#define MAX_ITERATIONS 2
#define DEADLINE_EXCEEDED 3
#define RETRY_BUDGET_EXHAUSTED 4
#define CONSECUTIVE_TOOL_FAILURES 5
#define TOKEN_BUDGET_EXHAUSTED 6
#define STAGNATION 7
#define PLANNER_ERROR 8
#define CANCELLED_BY_USER 9
#define REJECTED_BY_REVIEWER 10
#define INTERNAL 11
#define COST_BUDGET_EXHAUSTED 12

/* rein.v1.PauseReason (0 = none) */
#define PAUSE_POINT 1
#define NEED_HUMAN 2
#define NOTES 3
#define RECOVERY 4
#define STAGNATED 7

/* rein.v1.OnStagnation */
#define REPLAN_THEN_PAUSE 1
#define PAUSE 2
#define FAIL 3

/* Stagnation needs at least this many actions since the last mark: the window for the
   same-call rule, 3 for the repeated-failure rule (6 for alternation is larger than both). */
#if W < 3
#define STAG_MIN W
#else
#define STAG_MIN 3
#endif

/* The bound of rule "every run reaches a terminal stage or PAUSED": commits since the run
   started or since its last accepted review. Justified in README.md. */
#define BOUND (4 * M + R + D - 2)

#include "table.pml"

/* ---- the run's state (RunState, abstracted) ---- */
byte stage;
byte iteration;       /* RunState.iteration */
byte retries;         /* RunState.retries_used */
byte ctf;             /* RunState.consecutive_tool_failures */
bool over_tokens;     /* tokens_used > token_budget (rule 6); only grows */
bool over_cost;       /* cost_used_usd > cost_budget_usd, or a reply not priced (rule 6, after
                         the token budget); only grows */
bool cancel_req;      /* RunState.cancel_requested */
byte now;             /* ticks since start; the deadline is at D */
byte pending;         /* subtasks on the stack */
bool goal;            /* RunState.goal_achieved */
bool has_call;        /* RunState.pending_call is set */
bool call_mut;        /* ... and is a mutating call */
bool call_disp;       /* RunState.call_dispatched */
byte fresh;           /* actions since the stagnation mark (capped at STAG_MIN) */
bool replanned;       /* RunState.stagnation_replans > 0 */
byte p_reason;        /* Pause.reason, 0 = none */
byte p_resume;        /* Pause.resume_stage */
bool p_call;          /* Pause.pending_call is set */
byte reason;          /* Outcome.reason */

/* ---- child runs (RunState.children, child_groups; router_service/children) ---- */
#define K_NONE 0      /* no member in this slot */
#define K_NEW 1       /* a member not started yet (no run id recorded) */
#define K_LIVE 2      /* a started child at work (any working stage) */
#define K_PAUSED 3    /* ... paused for a person */
#define K_WAIT 4      /* ... WAITING for its own child (member 0 only) */
#define K_END 5       /* ... ended (FINISHED, FAILED or CANCELLED, any reason), or not started */
#define G_NONE 0      /* member 0's own child (the grandchild): none */
#define G_LIVE 1
#define G_PAUSED 2
#define G_END 3
byte dele;            /* which subtasks on the stack are delegated: bit 0 the top */
byte used;            /* child runs started in all (RunState.children_size()) */
byte kids;            /* the current group's size (0 outside WAITING) */
byte kid[2];          /* the members */
bool kc[2];           /* a member's cancel was requested (the parent's cascade) */
byte gk;              /* member 0's child (one level of nesting) */
bool gc;              /* ... its cancel was requested (member 0's cascade) */
bool gmay;            /* member 0 may open its own group of one (its carved max_children) */

/* ---- the spec, chosen once per run ---- */
byte mode;            /* on_stagnation */
/* pause_on_notes, the pause points and the token budget are not stored: at every
   opportunity the model may pause (NOTES or PAUSE_POINT) or go over the token budget, which
   covers every configuration of them at once (README.md) */

/* ---- the driver ---- */
bool in_flight;       /* a call has been sent and its reply has not come back */
bool view1, view2;    /* reviewer 1 / 2 read the current version (a commit makes both stale) */

/* ---- ghosts, for the properties ---- */
byte open;            /* subtasks ever planned that have not ended (COMPLETED or FAILED) */
byte finished_events; /* terminal events emitted */
byte steps;           /* commits since the start or the last accepted review */
bool may_have_run;    /* the pending mutating call was sent and nothing has answered it since */
/* scratch, dead between driver steps (each step is atomic): kept out of the state vector */
hidden byte prev_retries;
hidden byte from;           /* stage before the commit in progress */
hidden byte cancel_before;  /* cancel_req before the commit in progress */
hidden byte lim;            /* result of end_if_limited */
hidden byte stag;           /* stagnation detected */
hidden byte next;           /* where an evaluation goes */
hidden byte cand;           /* a candidate pause reason after an evaluation */
hidden byte n;
hidden byte k;              /* a group's size */
hidden byte share;          /* a child's carved iterations or retry units */
hidden byte all_ended;      /* every member had ended when the driver read them */
hidden byte started;        /* the driver started members in this step */

/* ---- Step / Terminate / rules 1-6 (stage_router.cc, termination.cc) ---- */

inline move_to(s) { stage = s }

#define KID_LIVE(i) (kid[i] != K_NONE && kid[i] != K_END)
#define TREE_LIVE (KID_LIVE(0) || KID_LIVE(1) || gk == G_LIVE || gk == G_PAUSED)

inline terminate(s, why) {
  /* rule 8: FINISHED only when the goal is claimed AND every subtask ever planned ended */
  assert(s != FINISHED || (goal && pending == 0 && open == 0));
  /* no child outlives its parent: every member of the group, and member 0's own child, ended */
  assert(!TREE_LIVE);
  has_call = false;
  call_disp = false;
  cancel_req = false;
  call_mut = false;
  p_reason = 0;
  p_resume = 0;
  p_call = false;
  reason = why;
  move_to(s);
  finished_events++
}

/* CheckLimits, rules 1-6 in order (6: the token budget, then the cost budget); lim = the run
   ended. */
inline end_if_limited(begins) {
  lim = true;
  if
  :: cancel_req -> terminate(CANCELLED, CANCELLED_BY_USER)
  :: else ->
    if
    :: (begins) && iteration >= M -> terminate(FAILED, MAX_ITERATIONS)
    :: else ->
      if
      :: now >= D -> terminate(FAILED, DEADLINE_EXCEEDED)
      :: else ->
        if
        :: retries > R -> terminate(FAILED, RETRY_BUDGET_EXHAUSTED)
        :: else ->
          if
          :: ctf >= F -> terminate(FAILED, CONSECUTIVE_TOOL_FAILURES)
          :: else ->
            if
            :: over_tokens -> terminate(FAILED, TOKEN_BUDGET_EXHAUSTED)
            :: else ->
              if
              :: over_cost -> terminate(FAILED, COST_BUDGET_EXHAUSTED)
              :: else -> lim = false
              fi
            fi
          fi
        fi
      fi
    fi
  fi
}

inline set_pause(why, resume, with_call) {
  has_call = false;
  move_to(PAUSED);
  p_reason = why;
  p_resume = resume;
  p_call = with_call
}

/* PauseRun: rules 1-6 win over the pause. */
inline pause_run(why, resume, with_call) {
  end_if_limited(false);
  if
  :: !lim -> set_pause(why, resume, with_call)
  :: else -> skip
  fi
}

inline finish_run() {
  end_if_limited(false);
  if
  :: !lim -> terminate(FINISHED, GOAL_ACHIEVED)
  :: else -> skip
  fi
}

/* Enter: an iteration begins when entering PLANNING or DECIDING from another stage. */
inline enter(s) {
  end_if_limited((s == PLANNING || s == DECIDING) && stage != s);
  if
  :: !lim ->
    if
    :: (s == PLANNING || s == DECIDING) && stage != s -> iteration++
    :: else -> skip
    fi;
    p_reason = 0;
    p_resume = 0;
    p_call = false;
    move_to(s)
  :: else -> skip
  fi
}

/* SpendRetry: a failed stage attempt spends one unit unless rule 1 or 3 already holds. */
inline spend_retry() {
  skip;
  if
  :: !(cancel_req || now >= D) -> retries++
  :: else -> skip
  fi;
  end_if_limited(false)
}

/* PlannerFailed: an error retrying cannot fix ends the run at once, after rules 1 and 3. */
inline planner_failed(fatal) {
  skip;
  if
  :: (fatal) && !(cancel_req || now >= D) -> terminate(FAILED, PLANNER_ERROR)
  :: else -> spend_retry()
  fi
}

/* A reply that carries usage: it may push the run over its token budget, its cost budget, or
   both. */
inline use_tokens() {
  skip;
  if
  :: over_tokens = true
  :: over_cost = true
  :: over_tokens = true; over_cost = true
  :: true -> skip
  fi
}

/* A pause a stage's reply may cause: notes (pause_on_notes), or the configured pause point. */
inline pick_pause() {
  if :: cand = 0 :: cand = NOTES :: cand = PAUSE_POINT fi
}

#include "children.pml"

/* ---- commits: every transition is checked here ---- */

inline begin_commit() {
  assert(!terminal(stage));
  from = stage;
  cancel_before = cancel_req;
  prev_retries = retries
}

inline end_commit(ev) {
  assert(allowed(from, ev, stage));
  steps++;
  assert(steps <= BOUND);
  view1 = false;
  view2 = false;
  /* exactly one terminal event, and only in a terminal stage */
  assert(finished_events == (terminal(stage) -> 1 : 0));
  /* a recorded cancel ends the run at the next transition; a WAITING parent's at the join
     (recording the children's ids, children_started, may come between) */
  assert(!cancel_before || ev == EV_cancel_request || ev == EV_children_started ||
         stage == CANCELLED);
  /* the retry budget: never reset, never exceeded (a run over it is over); a join may take a
     parent past R + 1 by its children's last attempts, one per child at most, and ends it */
  assert(retries >= prev_retries);
  assert(retries <= R + 1 || (ev == EV_children_joined && terminal(stage) && retries <= R + P));
  assert(retries <= R || terminal(stage));
  assert(iteration <= M);
  assert(terminal(stage) || stage == PAUSED || !p_reason)
}

/* ---- the replies of the planner and the executor ---- */

inline on_tools() {
  begin_commit();
  if
  :: spend_retry(); end_commit(EV_tools_error)
  :: enter(PLANNING); end_commit(EV_tools_ok)
  fi
}

inline on_plan() {
  begin_commit();
  if
  :: planner_failed(false); end_commit(EV_plan_error)
  :: planner_failed(true); end_commit(EV_plan_fatal)
  :: use_tokens(); spend_retry(); end_commit(EV_plan_invalid)
  :: use_tokens(); pause_run(NEED_HUMAN, PLANNING, false); end_commit(EV_plan_refusal)
  :: use_tokens(); goal = false; spend_retry(); end_commit(EV_plan_empty)
  :: use_tokens();
     /* new subtasks (1 or 2, the stack kept small), the goal claimed or not, notes or not */
     if
     :: pending < MAXPENDING -> n = 1
     :: pending + 2 <= MAXPENDING -> n = 2
     fi;
     pending = pending + n;
     open = open + n;
     pick_delegation();
     if :: goal = true :: goal = false fi;
     pick_pause();   /* notes, or AFTER_PLAN */
     if
     :: cand != 0 -> pause_run(cand, DECIDING, false)
     :: else -> enter(DECIDING)
     fi;
     /* the reply may carry the first call of its top subtask (RunSpec.combine_plan_decide):
        kept only when the run went on to DECIDING (RunState.pending_call), dropped otherwise */
     if
     :: stage == DECIDING ->
        has_call = true;
        if :: call_mut = true :: call_mut = false fi
     :: skip
     fi;
     end_commit(EV_plan_ok)
  :: use_tokens();
     /* no new subtasks, goal claimed: finished only with nothing pending (rule 8) */
     goal = true;
     if :: cand = NOTES :: cand = 0 fi;   /* notes (AFTER_PLAN needs new subtasks) */
     if
     :: pending == 0 && cand != 0 -> pause_run(NOTES, FINISHED, false)
     :: pending == 0 && cand == 0 -> finish_run()
     :: pending > 0 && cand != 0 -> pause_run(NOTES, DECIDING, false)
     :: pending > 0 && cand == 0 -> enter(DECIDING)
     fi;
     end_commit(EV_plan_done)
  fi
}

inline on_decide() {
  begin_commit();
  assert(pending > 0);
  if
  :: planner_failed(false); end_commit(EV_decide_error)
  :: planner_failed(true); end_commit(EV_decide_fatal)
  :: use_tokens(); spend_retry(); end_commit(EV_decide_invalid)
  :: use_tokens(); pause_run(NEED_HUMAN, DECIDING, false); end_commit(EV_decide_refusal)
  :: use_tokens(); pause_run(NEED_HUMAN, DECIDING, false); end_commit(EV_decide_query)
  :: use_tokens();
     has_call = true;
     if :: call_mut = true :: call_mut = false fi;
     call_disp = false;
     may_have_run = false;   /* a new call (a new call_id) */
     pick_pause();   /* notes, or BEFORE_TOOL / BEFORE_MUTATING_TOOL */
     if
     :: cand != 0 -> pause_run(cand, EXECUTING, true)
     :: else -> enter(EXECUTING)
     fi;
     end_commit(EV_decide_call)
  fi
}

/* The call the last plan or evaluation proposed, committed by Next as the decision
   (OnProposedCall):
   on_decide's tool-call branch with no reply of its own (no tokens). */
inline on_proposed_call() {
  begin_commit();
  assert(pending > 0 && has_call);
  call_disp = false;
  may_have_run = false;
  pick_pause();   /* BEFORE_TOOL / BEFORE_MUTATING_TOOL */
  if
  :: cand != 0 -> pause_run(cand, EXECUTING, true)
  :: else -> enter(EXECUTING)
  fi;
  end_commit(EV_proposed_call)
}

inline mark_dispatched() {
  begin_commit();
  call_disp = true;
  end_commit(EV_dispatch)
}

/* The driver sends the pending call (not a commit). */
inline dispatch() {
  if
  :: stage == EXECUTING && call_mut ->
     /* never twice without a review or an executor's answer in between */
     assert(!may_have_run);
     assert(call_disp);
     may_have_run = true
  :: else -> skip
  fi;
  in_flight = true
}

inline on_execute() {
  begin_commit();
  assert(has_call);
  if
  :: /* RESOURCE_EXHAUSTED: nothing ran, no budget spent; the driver backs off (a tick) */
     may_have_run = false;
     end_if_limited(false);
     end_commit(EV_exec_full);
     if :: now < D -> now++ :: else -> skip fi
  :: /* the call surely did not run */
     may_have_run = false;
     spend_retry();
     end_commit(EV_exec_rejected)
  :: /* no reply: the call may have run */
     spend_retry();
     if
     :: !terminal(stage) && call_mut && call_disp ->
        call_disp = false;
        set_pause(RECOVERY, EXECUTING, true)
     :: else -> skip
     fi;
     end_commit(EV_exec_error)
  :: /* the tool ran, ok or not: an observation */
     may_have_run = false;
     has_call = false;
     call_mut = false;
     call_disp = false;
     if :: fresh < STAG_MIN -> fresh++ :: else -> skip fi;
     if
     :: ctf = 0; enter(EVALUATING); end_commit(EV_exec_ok)
     :: ctf++; enter(EVALUATING); end_commit(EV_exec_failed)
     fi
  fi
}

/* ContinueAfterEvaluation: rules 1-6, stagnation (rule 7), pauses, then the move. */
inline continue_after_evaluation() {
  end_if_limited(next == DECIDING || next == PLANNING);
  if
  :: !lim ->
     /* rule 7, abstracted: the detector may fire once enough actions are fresh */
     stag = false;
     if :: fresh >= STAG_MIN -> stag = true :: true -> skip fi;
     if
     :: stag ->
        fresh = 0;
        if
        :: mode == FAIL -> terminate(FAILED, STAGNATION)
        :: mode == REPLAN_THEN_PAUSE && !replanned ->
           replanned = true;
           if
           :: pending > 0 -> pending--; open--; dele = dele >> 1
           :: else -> skip
           fi;
           enter(PLANNING)
        :: else -> set_pause(STAGNATED, next, false)
        fi
     :: !stag && cand != 0 -> set_pause(cand, next, false)
     :: !stag && cand == 0 && next == FINISHED -> finish_run()
     :: !stag && cand == 0 && next != FINISHED -> enter(next)
     fi
  :: else -> skip
  fi
}

inline on_evaluate() {
  begin_commit();
  assert(pending > 0);
  if
  :: planner_failed(false); end_commit(EV_eval_error)
  :: planner_failed(true); end_commit(EV_eval_fatal)
  :: use_tokens(); spend_retry(); end_commit(EV_eval_invalid)
  :: use_tokens(); pause_run(NEED_HUMAN, EVALUATING, false); end_commit(EV_eval_refusal)
  :: use_tokens();
     if
     :: pending--; open--; dele = dele >> 1; n = 1   /* COMPLETED or FAILED: it ends */
     :: n = 0                        /* NEEDS_MORE_WORK: it stays on the stack */
     fi;
     if :: goal = true :: goal = false fi;
     if
     :: goal && pending == 0 -> next = FINISHED
     :: pending > 0 -> next = DECIDING
     :: else -> next = PLANNING
     fi;
     pick_pause();   /* notes, or AFTER_EVALUATE */
     continue_after_evaluation();
     if
     :: n == 1 -> end_commit(EV_eval_done)
     :: else ->
        /* NEEDS_MORE_WORK may carry the next call: kept only when the run went on to
           DECIDING (RunState.pending_call in DECIDING), dropped otherwise */
        if
        :: stage == DECIDING && !goal ->
           has_call = true;
           if :: call_mut = true :: call_mut = false fi
        :: skip
        fi;
        end_commit(EV_eval_more)
     fi
  fi
}

/* ---- reviews (OnReview): only of a PAUSED run, only with the current version ---- */

inline go_on() {
  next = p_resume;   /* enter() clears the pause */
  if :: p_reason == STAGNATED -> fresh = 0 :: else -> skip fi;
  if
  :: next == EXECUTING ->
     assert(p_call);
     has_call = true;
     call_disp = false;
     may_have_run = false   /* a person approved the call */
  :: else -> skip
  fi;
  if
  :: next == FINISHED -> finish_run()
  :: else -> enter(next)
  fi
}

inline review() {
  begin_commit();
  steps = 0;
  if
  :: p_reason != NEED_HUMAN -> go_on(); end_commit(EV_review_approve)
  :: go_on(); end_commit(EV_review_answer)
  :: /* reject: the stack is dropped (its subtasks end FAILED), back to PLANNING */
     open = open - pending;
     pending = 0;
     dele = 0;
     has_call = false;
     call_mut = false;
     call_disp = false;
     goal = false;
     enter(PLANNING);
     end_commit(EV_review_reject)
  :: terminate(FAILED, REJECTED_BY_REVIEWER); end_commit(EV_review_abort)
  :: /* edit_plan: the stack is replaced */
     open = open - pending;
     if :: pending = 1 :: pending = 2 fi;
     open = open + pending;
     /* a reviewer's plan is not checked against the child limits (OpenGroup fails a subtask
        that cannot run as a child) */
     if :: dele = 0 :: dele = 1 :: pending == 2 -> dele = 2 :: pending == 2 -> dele = 3 fi;
     has_call = false;
     call_mut = false;
     call_disp = false;
     goal = false;
     if :: p_reason == STAGNATED -> fresh = 0 :: else -> skip fi;
     enter(DECIDING);
     end_commit(EV_review_edit_plan)
  :: p_call && pending > 0 ->
     /* edit_tool_call: a new call (new call_id) for the top subtask */
     has_call = true;
     if :: call_mut = true :: call_mut = false fi;
     call_disp = false;
     may_have_run = false;
     enter(EXECUTING);
     end_commit(EV_review_edit_call)
  fi
}

/* ---- the driver ---- */

inline on_cancel() {
  begin_commit();
  if
  :: in_flight || stage == WAITING ->
     /* recorded: the call's result ends the run; a WAITING parent's join, after its children */
     cancel_req = true; end_commit(EV_cancel_request)
  :: else -> terminate(CANCELLED, CANCELLED_BY_USER); end_commit(EV_cancel)
  fi
}

inline on_tick() {
  begin_commit();
  end_if_limited(false);
  end_commit(EV_tick)
}

/* After a restart: a mutating call that was marked sent pauses the run (RECOVERY). */
inline on_recovery() {
  begin_commit();
  call_disp = false;
  pause_run(RECOVERY, EXECUTING, true);
  end_commit(EV_recovery)
}

inline reply() {
  in_flight = false;
  if
  :: stage == INITIALIZING -> on_tools()
  :: stage == PLANNING -> on_plan()
  :: stage == DECIDING -> on_decide()
  :: stage == EXECUTING -> on_execute()
  :: stage == EVALUATING -> on_evaluate()
  fi
}

active proctype router() {
  /* the spec */
  if :: mode = REPLAN_THEN_PAUSE :: mode = PAUSE :: mode = FAIL fi;
  d_step { fill_table() };
  stage = INITIALIZING;   /* NewRun */

  do
  :: terminal(stage) -> break
  :: !terminal(stage) && in_flight -> atomic {
     /* a call is out: its reply, a cancel, a tick or a router restart may come first */
     if
     :: reply()
     :: !cancel_req -> on_cancel()
     :: now < D -> now++
     :: stage == EXECUTING && call_mut && call_disp ->
        in_flight = false;   /* the router restarted: the reply is lost */
        on_recovery()
     fi }
  :: stage == WAITING -> atomic {
     /* Next of a WAITING parent (NextWaiting): its cancel and deadline reach the children */
     waiting_step() }
  :: !terminal(stage) && stage != WAITING && !in_flight -> atomic {
     /* the driver's Next (each step atomic: the states between its statements are not
        states of the router) */
     if
     :: cancel_req || now >= D -> on_tick()
     :: else ->
        if
        :: stage == PAUSED ->
           if
           :: view1 -> review()   /* reviewer 1 with the current version */
           :: view2 -> review()   /* reviewer 2 with the current version */
           :: !view1 -> view1 = true    /* reviewer 1 reads the run */
           :: !view2 -> view2 = true
           :: on_cancel()
           :: now < D -> now++
           :: skip -> goto idle    /* nobody reviews, the deadline never comes: PAUSED for good */
           fi
        :: stage == DECIDING && (dele & 1) ->
           if
           :: open_group()
           :: on_cancel()
           :: now < D -> now++
           fi
        :: stage == DECIDING && !(dele & 1) && has_call -> on_proposed_call()
        :: stage == EXECUTING && call_mut && !call_disp -> mark_dispatched()
        :: stage == EXECUTING && call_mut && call_disp ->
           if
           :: dispatch()
           :: on_recovery()   /* the router restarted between the mark and the send */
           :: on_cancel()
           :: now < D -> now++
           fi
        :: stage != PAUSED && !(stage == EXECUTING && call_mut) &&
           !(stage == DECIDING && (has_call || (dele & 1))) ->
           if
           :: dispatch()
           :: on_cancel()
           :: now < D -> now++
           fi
        fi
     fi }
  od;
  assert(finished_events == 1);
  /* the parent ended: so did every run of its tree */
  assert(!TREE_LIVE);
  /* no transition leaves a terminal stage: the loop above has none, and the LTL formula
     `terminal_stays' checks the stage never changes again */
  goto done;
idle:
  assert((stage == PAUSED || (stage == WAITING && TREE_PAUSED)) && finished_events == 0);
done:
  skip
}

/* LTL (checked with -a, one at a time with -N). */
#define is_terminal (stage == FINISHED || stage == FAILED || stage == CANCELLED)
#define at_rest (is_terminal || stage == PAUSED || TREE_PAUSED)

/* Once terminal, always terminal (and the same terminal stage). */
ltl terminal_stays {
  [] ((stage == FINISHED -> [] (stage == FINISHED)) &&
      (stage == FAILED -> [] (stage == FAILED)) &&
      (stage == CANCELLED -> [] (stage == CANCELLED)))
}

/* Every run comes to rest (terminal, or PAUSED itself or somewhere in its tree) again and
   again: no cycle avoids it. */
ltl comes_to_rest { [] <> at_rest }

/* A recorded cancel is followed by CANCELLED (no other end, no way around it). */
ltl cancel_ends { [] (cancel_req -> <> (stage == CANCELLED)) }

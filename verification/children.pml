/*
 * Child runs in the model of the stage router (included by stage_router.pml; see its header
 * and verification/README.md): delegation in plans, OpenGroup, the members of a WAITING
 * parent's group and member 0's own child, the driver's start, read and cascade, and the join.
 */

/* The plan's n new subtasks go on top of the stack; CheckDelegation: a subtask may be
   delegated only while children are left (at most C - used of them) and at most P in a row. */
inline pick_delegation() {
  dele = dele << n;
  if
  :: skip
  :: C > used && (P >= 2 || !(dele & 2)) -> dele = dele | 1
  :: n == 2 && C > used -> dele = dele | 2
  :: n == 2 && C >= used + 2 && P >= 2 -> dele = dele | 3
  fi
}

/* ---- child runs (router_service/children/child_group.cc) ---- */

/* OpenGroup: DECIDING with delegated subtasks on top -> WAITING with a group of k members
   (the consecutive delegated subtasks, at most P, the children left and the iterations left).
   When none can start, the top subtask fails and the run goes on as after an evaluation. */
inline open_group() {
  begin_commit();
  end_if_limited(false);
  if
  :: !lim ->
     has_call = false;   /* a call the plan proposed has no use: the subtask runs as a child */
     call_mut = false;
     call_disp = false;
     k = ((dele & 3) == 3 && pending >= 2 -> 2 : 1);
     if :: k > P -> k = P :: else -> skip fi;
     if :: k > C - used -> k = C - used :: else -> skip fi;
     if :: k > M - iteration -> k = M - iteration :: else -> skip fi;
     if
     :: k == 0 ->
        pending--; open--; dele = dele >> 1;
        if
        :: goal && pending == 0 -> next = FINISHED
        :: pending > 0 -> next = DECIDING
        :: else -> next = PLANNING
        fi;
        cand = 0;
        continue_after_evaluation()
     :: else ->
        kids = k;
        used = used + k;
        kid[0] = K_NEW;
        kid[1] = (k == 2 -> K_NEW : K_NONE);
        /* a member's max_children: (children left - k) / k (max_depth 2: none below it) */
        gmay = ((C - used) / k >= 1);
        move_to(WAITING)
     fi
  :: else -> skip
  fi;
  end_commit(EV_open_group)
}

/* A member ends (any terminal stage and reason): never before its own child. */
inline kid_end(i) {
  assert(i != 0 || gk == G_NONE || gk == G_END);
  kid[i] = K_END
}

/* What a member does on its own (its router drives it as any run): work to its end, pause for
   a person, be reviewed, open its own group of one (member 0), and as a WAITING run of its own
   cascade its cancel and deadline to its child and join it. Each step is a choice. */
inline kid_moves(i) {
  if
  :: kid[i] == K_LIVE ->
     if
     :: kid_end(i)
     :: !kc[i] && now < D -> kid[i] = K_PAUSED
     :: !kc[i] && now < D && i == 0 && gmay -> gmay = false; kid[0] = K_WAIT; gk = G_LIVE; gc = false
     fi
  :: kid[i] == K_PAUSED ->
     if
     :: now < D -> kid[i] = K_LIVE   /* a person reviews it */
     :: now >= D -> kid_end(i)       /* its deadline (the parent's): OnTick */
     fi
  :: kid[i] == K_WAIT && (kc[i] || now >= D) && gk == G_PAUSED -> gk = G_END
  :: kid[i] == K_WAIT && (kc[i] || now >= D) && gk == G_LIVE && !gc -> gc = true
  :: kid[i] == K_WAIT && !((kc[i] || now >= D) && (gk == G_PAUSED || (gk == G_LIVE && !gc))) ->
     if
     :: gk == G_END ->   /* its join */
        gk = G_NONE;
        if
        :: kid_end(i)
        :: !kc[i] && now < D -> kid[i] = K_LIVE
        fi
     :: gk == G_LIVE -> gk = G_END
     :: gk == G_LIVE && !gc && now < D -> gk = G_PAUSED
     :: gk == G_PAUSED && now < D -> gk = G_LIVE
     :: gk == G_PAUSED && now >= D -> gk = G_END
     fi
  fi
}

#define KID_CAN_MOVE(i) (kid[i] == K_LIVE || kid[i] == K_PAUSED || kid[i] == K_WAIT)
#define KID_ENDED(i) (kid[i] == K_NONE || kid[i] == K_END)
#define MUST_CANCEL (cancel_req || now >= D)
#define KID_TO_CANCEL(i) (kid[i] == K_PAUSED || ((kid[i] == K_LIVE || kid[i] == K_WAIT) && !kc[i]))
/* The parent's next step does something: start members, cascade, or join. */
#define CAN_OBSERVE (kid[0] == K_NEW || kid[1] == K_NEW || (KID_ENDED(0) && KID_ENDED(1)) || \
                     (MUST_CANCEL && (KID_TO_CANCEL(0) || KID_TO_CANCEL(1))))
/* Something in the tree is paused (nobody may ever come back to it). */
#define TREE_PAUSED (kid[0] == K_PAUSED || kid[1] == K_PAUSED || gk == G_PAUSED)

/* The join (OnChildren with every member ended): each delegated subtask ends from its
   child's outcome (any terminal reason: COMPLETED for FINISHED, FAILED otherwise); the
   children's iterations and retries, each within its carved share, and their usage are added
   to the parent's; then rules 1-7 and on as after an evaluation. */
inline join() {
  begin_commit();
  /* a parent never leaves WAITING while one of its children runs */
  assert(KID_ENDED(0) && KID_ENDED(1));
  /* iterations: each child at most (M - iteration) / kids, its carved max_iterations */
  share = (M - iteration) / kids;
  n = 0;
  do
  :: n < kids * share -> n++
  :: break
  od;
  iteration = iteration + n;
  /* retries: each child's budget is (R - retries + 1) / kids - 1 (at least 0), and a run
     spends at most one past its budget */
  share = (R - retries + 1) / kids;
  if :: share < 1 -> share = 1 :: else -> skip fi;
  n = 0;
  do
  :: n < kids * share -> n++
  :: break
  od;
  retries = retries + n;
  use_tokens();
  pending = pending - kids;
  open = open - kids;
  dele = dele >> kids;
  if
  :: goal && pending == 0 -> next = FINISHED
  :: pending > 0 -> next = DECIDING
  :: else -> next = PLANNING
  fi;
  cand = 0;
  continue_after_evaluation();
  kids = 0;
  kid[0] = K_NONE;
  kid[1] = K_NONE;
  kc[0] = false;
  kc[1] = false;
  gk = G_NONE;
  gc = false;
  gmay = false;
  end_commit(EV_children_joined)
}

/* The driver's kChildren call for a WAITING parent (ChildRunner::Observe) and its answer
   (OnChildren): start the members not started (each created, or its start fails), read every
   member, cancel the live ones when the parent was cancelled or passed its deadline (a paused
   one ends at once), then commit what changed: the children's ids, or the join. */
inline observe() {
  started = false;
  if
  :: kid[0] == K_NEW -> started = true; if :: kid[0] = K_LIVE :: kid[0] = K_END fi
  :: else -> skip
  fi;
  if
  :: kid[1] == K_NEW -> started = true; if :: kid[1] = K_LIVE :: kid[1] = K_END fi
  :: else -> skip
  fi;
  all_ended = KID_ENDED(0) && KID_ENDED(1);   /* as read, before the cascade */
  if
  :: MUST_CANCEL ->
     if
     :: kid[0] == K_PAUSED -> kid_end(0)
     :: kid[0] == K_LIVE || kid[0] == K_WAIT -> kc[0] = true
     :: else -> skip
     fi;
     if
     :: kid[1] == K_PAUSED -> kid_end(1)
     :: kid[1] == K_LIVE || kid[1] == K_WAIT -> kc[1] = true
     :: else -> skip
     fi
  :: else -> skip
  fi;
  if
  :: all_ended -> join()
  :: !all_ended && started -> begin_commit(); end_commit(EV_children_started)
  :: else -> skip   /* nothing to commit: the driver asks again at the next change or poll */
  fi
}

/* One step while the parent is WAITING: its own next step, a member's, a cancel, a tick. */
inline waiting_step() {
  if
  :: MUST_CANCEL && (KID_TO_CANCEL(0) || KID_TO_CANCEL(1)) ->
     observe()   /* the cascade does not wait for the poll (NextWaiting) */
  :: else ->
  if
  :: CAN_OBSERVE -> observe()
  :: KID_CAN_MOVE(0) -> kid_moves(0)
  :: KID_CAN_MOVE(1) -> kid_moves(1)
  :: !cancel_req -> on_cancel()
  :: now < D -> now++
  :: !CAN_OBSERVE && !MUST_CANCEL && TREE_PAUSED && kid[0] != K_LIVE && kid[1] != K_LIVE &&
     gk != G_LIVE -> goto idle   /* nobody reviews the paused child, no cancel, no deadline */
  fi
  fi
}

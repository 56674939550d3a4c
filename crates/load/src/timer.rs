//! Waiting for an open-loop call's intended start at the kernel's timer
//! resolution.
//!
//! tokio's timer rounds every deadline up to a whole millisecond, so a call
//! woken by `tokio::time::sleep_until` starts 1-2 ms after its intended time
//! (measured: schedule lag median 1.40 ms, minimum 0.84 ms, at 20 calls/s on
//! loopback). Open-loop latency counts from the intended time, so that delay
//! would be reported as the server's: on loopback it was five times the
//! service time. A `timerfd` armed for the exact instant and watched by
//! tokio's reactor wakes within the scheduler's latency instead.
//!
//! One timer per caller, created on first use. When a timerfd cannot be had
//! (no descriptors left, not Linux-like), the wait falls back to tokio's
//! timer; the engine's schedule-lag histogram shows the difference either way.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Instant;

use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// The thread CPU time so far, in ns.
pub(crate) fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A one-shot timer on a `timerfd`, or tokio's timer when none is available.
pub(crate) struct PreciseTimer {
    fd: Option<AsyncFd<OwnedFd>>,
}

impl PreciseTimer {
    /// A timer; never fails (falls back to tokio's timer).
    pub(crate) fn new() -> PreciseTimer {
        let fd = rustix::time::timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .ok()
        .and_then(|fd| {
            // Deprecated in tokio 1.54 in favour of an `unsafe` constructor
            // whose one condition (the descriptor stays open and the same for
            // the AsyncFd's life) an `OwnedFd` moved into it meets; the
            // workspace forbids `unsafe`.
            #[allow(deprecated)]
            AsyncFd::with_interest(fd, Interest::READABLE).ok()
        });
        PreciseTimer { fd }
    }

    /// Whether waits use a timerfd (not tokio's millisecond timer).
    #[cfg(test)]
    pub(crate) fn is_precise(&self) -> bool {
        self.fd.is_some()
    }

    /// Returns at `at` or soon after, never before. Cancel-safe: dropping the
    /// future leaves the timer armed, and the next call re-arms it (which
    /// also clears any expiry that happened in between).
    pub(crate) async fn sleep_until(&self, at: Instant) {
        let precise = match &self.fd {
            Some(fd) => wait_on(fd, at).await,
            None => Err(io::ErrorKind::Unsupported.into()),
        };
        if precise.is_err() {
            // Never return early: finish on tokio's timer.
            tokio::time::sleep_until(at.into()).await;
        }
    }
}

/// The longest an open-loop caller spins before its intended start.
pub(crate) const SPIN_MAX_NS: u64 = 500_000;

/// How long to spin before each intended start at this mean interval
/// between a thread's calls: a twentieth of the interval (at most 5% of the
/// thread's time), at most [`SPIN_MAX_NS`]; none for a closed loop.
///
/// An idle core takes tens of microseconds to wake from a timer (more in a
/// VM, where the idle vCPU halts): measured here as a schedule lag p50 of
/// 54 us at 200 calls/s. Waking that much early and spinning the rest keeps
/// the core awake for the send. The longer a core has been idle, the longer
/// it takes to wake: with at most 100 us of spin the lag p99 was 85-201 us
/// at 100-500 calls/s per thread, with at most 500 us 25-61 us
/// (`bench/openloop.sh`, docs/engine.md), for 5% of a core spent spinning.
pub(crate) fn spin_for(mean_interval_ns: Option<f64>) -> std::time::Duration {
    let ns = mean_interval_ns.map_or(0.0, |i| (i / 20.0).clamp(0.0, SPIN_MAX_NS as f64));
    std::time::Duration::from_nanos(ns as u64)
}

/// The shortest read spin worth having: a call on loopback takes about
/// 100 us here, so a shorter spin would rarely see the reply arrive.
const READ_SPIN_MIN_NS: u64 = 50_000;

/// The longest read spin: a loopback reply comes within 200 us or is late
/// enough that a wake-up's tens of microseconds do not matter.
const READ_SPIN_MAX_NS: u64 = 200_000;

/// How long a caller waits for each reply awake (`driver::net::set_read_spin`)
/// given its start spin: twice as long (a tenth of the interval, at most
/// 10% of the thread's time), at most [`READ_SPIN_MAX_NS`], or not at all when that is
/// under [`READ_SPIN_MIN_NS`] (above 2,000 calls/s per thread, where the
/// core is seldom idle long enough to sleep deeply and a spin would cost
/// CPU without catching the reply).
pub(crate) fn read_spin_for(start_spin: std::time::Duration) -> std::time::Duration {
    let spin = (start_spin * 2).min(std::time::Duration::from_nanos(READ_SPIN_MAX_NS));
    if spin.as_nanos() < u128::from(READ_SPIN_MIN_NS) {
        std::time::Duration::ZERO
    } else {
        spin
    }
}

/// The last stretch of a start spin, spun without yielding: a task that
/// runs in it delays this send by up to this much, never more.
const HARD_SPIN_NS: u64 = 20_000;

impl PreciseTimer {
    /// [`PreciseTimer::sleep_until`] `at - spin`, then spins until `at`:
    /// returns at `at` or soon after, never before, with the core awake.
    ///
    /// The spin yields to the thread's other tasks (which polls the reactor
    /// without sleeping) until the last [`HARD_SPIN_NS`], so that another
    /// caller's reply or intended start falling inside this spin is served
    /// then instead of after it: with a spin of up to 500 us and a Poisson
    /// schedule at 100 calls/s, one call in twenty starts inside another's
    /// spin.
    pub(crate) async fn sleep_then_spin(&self, at: Instant, spin: std::time::Duration) {
        if let Some(wake) = at.checked_sub(spin).filter(|w| *w > Instant::now()) {
            self.sleep_until(wake).await;
        }
        let hard = std::time::Duration::from_nanos(HARD_SPIN_NS);
        loop {
            let now = Instant::now();
            if now >= at {
                return;
            }
            if at - now > hard {
                tokio::task::yield_now().await;
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// Arms `fd` for `at` and waits until it expires.
///
/// The expiry count is read only when the clock cannot tell: re-arming with
/// `timerfd_settime` resets it, and every expiry wakes the (edge-triggered)
/// reactor again whether the last one was read or not. A readiness at or
/// after `at` (the clock reads the same `CLOCK_MONOTONIC` as the timer) is
/// this arming's expiry; one before it is a stale readiness (an earlier
/// wait given up before its timer fired) or, should the clock lag the
/// timer by a hair, this expiry, which the count tells apart. Reading the
/// count on every wait cost two system calls (the read, and on the next
/// wait a read that found nothing because the reactor still held the last
/// expiry's readiness): two of an open-loop call's seven.
async fn wait_on(fd: &AsyncFd<OwnedFd>, at: Instant) -> io::Result<()> {
    let Some(wait) = at.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
        return Ok(());
    };
    let spec = Itimerspec {
        it_interval: Timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: Timespec {
            tv_sec: wait.as_secs() as _,
            tv_nsec: wait.subsec_nanos() as _,
        },
    };
    rustix::time::timerfd_settime(fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
    loop {
        let mut ready = fd.readable().await?;
        // The kernel counts from when it was armed, after `wait` was taken,
        // so this arming's expiry is never before `at`.
        if Instant::now() >= at {
            // Cleared: the next arming's expiry sets it again.
            ready.clear_ready();
            return Ok(());
        }
        let expired = ready.try_io(|inner| {
            let mut count = [0u8; 8];
            rustix::io::read(inner.get_ref(), &mut count[..]).map_err(io::Error::from)
        });
        match expired {
            Ok(Ok(_)) => {
                ready.clear_ready();
                return Ok(());
            }
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(Err(e)) => return Err(e),
            // Stale (`try_io` cleared it): wait again.
            Err(_would_block) => continue,
        }
    }
}

/// Runs `one` (a spinning caller beside a waiting one, as `LocalSet` tasks
/// on a current-thread runtime like the engine's; it returns how late the
/// waiting one woke) up to three times, and passes on the first try under
/// `bound`: best of three against a busy machine.
#[cfg(test)]
pub(crate) fn wait_beside_a_spinning_caller_is_late_by_less_than<F, Fut>(bound: std::time::Duration, mut one: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::time::Duration>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let mut lateness = Vec::new();
    for _ in 0..3 {
        let late = local.block_on(&rt, one());
        lateness.push(late);
        if late < bound {
            return;
        }
    }
    panic!("the wait beside the spinning caller was late by {lateness:?}");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn lateness_us(timer: &PreciseTimer, rounds: usize) -> Vec<u128> {
        let mut late = Vec::with_capacity(rounds);
        for i in 0..rounds {
            // Intervals that fall at every phase of a millisecond.
            let at = Instant::now() + Duration::from_micros(1_500 + 37 * i as u64);
            timer.sleep_until(at).await;
            let now = Instant::now();
            assert!(now >= at, "woke {:?} early", at - now);
            late.push((now - at).as_micros());
        }
        late.sort_unstable();
        late
    }

    #[tokio::test(flavor = "current_thread")]
    async fn wakes_on_time_not_at_the_next_millisecond() {
        let timer = PreciseTimer::new();
        assert!(timer.is_precise(), "timerfd is available on Linux");
        // tokio's timer is never under ~0.8 ms late here; a timerfd's median
        // is tens of microseconds. The bound sits between the two, and the
        // best of three tries absorbs a busy machine (tests run in parallel).
        let mut medians = Vec::new();
        for _ in 0..3 {
            let late = lateness_us(&timer, 31).await;
            medians.push(late[late.len() / 2]);
            if medians.last() < Some(&500) {
                return;
            }
        }
        panic!("median lateness over 500 us in every try: {medians:?} us");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn spinning_the_last_stretch_wakes_within_microseconds_and_never_early() {
        let timer = PreciseTimer::new();
        let spin = Duration::from_micros(500);
        // Without the spin the median lateness here is tens of microseconds
        // (a core's wake-up); spinning the last 500 us leaves only the loop's
        // clock reads. Best of three tries against a busy machine.
        let mut medians = Vec::new();
        for _ in 0..3 {
            let mut late = Vec::new();
            for i in 0..31u64 {
                let at = Instant::now() + Duration::from_micros(1_500 + 37 * i);
                timer.sleep_then_spin(at, spin).await;
                let now = Instant::now();
                assert!(now >= at, "woke {:?} early", at - now);
                late.push((now - at).as_nanos());
            }
            late.sort_unstable();
            medians.push(late[late.len() / 2]);
            if medians.last() < Some(&5_000) {
                return;
            }
        }
        panic!("median lateness over 5 us in every try: {medians:?} ns");
    }

    #[test]
    fn a_wait_that_ends_inside_another_callers_spin_is_not_held_up_by_it() {
        // Caller A spins from 0.5 ms to its start at 2.5 ms; caller B's
        // start, at 1 ms, falls inside that spin. Spinning without yielding
        // held B until A's start (1.5 ms late); yielding lets B go within a
        // wake-up's tens of microseconds.
        wait_beside_a_spinning_caller_is_late_by_less_than(Duration::from_micros(500), || async {
            let t0 = Instant::now();
            let (a_at, b_at) = (t0 + Duration::from_micros(2_500), t0 + Duration::from_millis(1));
            let a = tokio::task::spawn_local(async move {
                PreciseTimer::new()
                    .sleep_then_spin(a_at, Duration::from_millis(2))
                    .await;
                assert!(Instant::now() >= a_at);
            });
            let b = tokio::task::spawn_local(async move {
                PreciseTimer::new().sleep_until(b_at).await;
                Instant::now() - b_at
            });
            a.await.unwrap();
            b.await.unwrap()
        });
    }

    #[test]
    fn the_spin_is_a_twentieth_of_the_interval_up_to_500_us_and_none_closed() {
        assert_eq!(spin_for(None), Duration::ZERO);
        assert_eq!(spin_for(Some(100_000.0)), Duration::from_micros(5)); // 10,000/s
        assert_eq!(spin_for(Some(1_000_000.0)), Duration::from_micros(50)); // 1,000/s
        assert_eq!(spin_for(Some(5_000_000.0)), Duration::from_micros(250)); // 200/s
        assert_eq!(spin_for(Some(10_000_000.0)), Duration::from_micros(500)); // 100/s
        assert_eq!(spin_for(Some(100_000_000.0)), Duration::from_micros(500)); // 10/s: capped
    }

    #[test]
    fn the_read_spin_is_twice_the_start_spin_from_50_us_up_to_200_us() {
        let read = |interval_ns: f64| read_spin_for(spin_for(Some(interval_ns)));
        assert_eq!(read_spin_for(spin_for(None)), Duration::ZERO); // closed loop
        assert_eq!(read(100_000.0), Duration::ZERO); // 10,000/s: 10 us would not catch a reply
        assert_eq!(read(400_000.0), Duration::ZERO); // 2,500/s: 40 us
        assert_eq!(read(500_000.0), Duration::from_micros(50)); // 2,000/s
        assert_eq!(read(1_000_000.0), Duration::from_micros(100)); // 1,000/s
        assert_eq!(read(2_000_000.0), Duration::from_micros(200)); // 500/s
        assert_eq!(read(5_000_000.0), Duration::from_micros(200)); // 200/s: capped
        assert_eq!(read(10_000_000.0), Duration::from_micros(200)); // 100/s: capped
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_wait_does_not_wake_the_next_one_early() {
        let timer = PreciseTimer::new();
        // Arm for 1 ms, give up after 0 ms, let it expire unobserved.
        let _ = tokio::time::timeout(
            Duration::ZERO,
            timer.sleep_until(Instant::now() + Duration::from_millis(1)),
        )
        .await;
        std::thread::sleep(Duration::from_millis(3));
        let at = Instant::now() + Duration::from_millis(20);
        timer.sleep_until(at).await;
        assert!(Instant::now() >= at);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn back_to_back_waits_each_wake_without_reading_the_expiry_count() {
        let timer = PreciseTimer::new();
        let fd = timer.fd.as_ref().expect("timerfd is available on Linux");
        // Every wait re-arms without reading: if an expiry could be lost
        // that way, a wait would never end and the time limit would fail.
        let waits = tokio::time::timeout(Duration::from_secs(10), async {
            for _ in 0..200 {
                let at = Instant::now() + Duration::from_micros(50);
                timer.sleep_until(at).await;
                assert!(Instant::now() >= at);
            }
        });
        waits.await.expect("200 waits of 50 us ended within 10 s");
        // The last expiry is still unread (a read per wait costs system
        // calls), and re-arming reset the count: one expiry, not 200.
        let mut count = [0u8; 8];
        rustix::io::read(fd.get_ref(), &mut count[..]).expect("the last expiry was left unread");
        assert_eq!(u64::from_ne_bytes(count), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_past_instant_returns_at_once() {
        let timer = PreciseTimer::new();
        let before = Instant::now();
        timer.sleep_until(before - Duration::from_millis(5)).await;
        assert!(before.elapsed() < Duration::from_millis(100));
    }
}

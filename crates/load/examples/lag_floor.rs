//! The floor under `bench/openloop.sh`'s schedule lag: how late a thread
//! that does nothing but wait for its send times gets to them on this
//! machine.
//!
//!   lag_floor RATE SECONDS
//!
//! One thread, uniform send times at RATE, the engine's waiting policy and
//! nothing else: a relative `timerfd` armed a start spin early (a twentieth
//! of the interval, at most 500 us: `timer::spin_for`), a blocking read of
//! it, then a spin to the send time. No calls are made, so its lag is the
//! wake-up and preemption tail of the machine itself (the hypervisor, other
//! tenants); what the engine shows above it at the same rate in the same
//! minute is its own. Prints `sends=N lag_p50_us=X lag_p99_us=Y`.
//!
//! A benchmark tool, not part of the product: `bench/openloop.sh` builds
//! and runs it beside each rate of its sweep.

use std::time::{Duration, Instant};

use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: lag_floor RATE SECONDS (e.g. 1000 5)");
        std::process::exit(2);
    }
    let number = |i: usize, what: &str| -> f64 {
        args[i].parse::<f64>().ok().filter(|v| *v > 0.0).unwrap_or_else(|| {
            eprintln!("lag_floor: {what} must be a positive number, got {:?}", args[i]);
            std::process::exit(2)
        })
    };
    let rate = number(1, "RATE");
    let seconds = number(2, "SECONDS");
    let interval = Duration::from_secs_f64(1.0 / rate);
    // The engine's start spin for this mean interval (timer::spin_for).
    let spin = (interval / 20).min(Duration::from_micros(500));
    let timer = rustix::time::timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC).expect("timerfd_create");

    let sends = (rate * seconds).round() as u64;
    let mut lag = Vec::with_capacity(sends as usize);
    let begin = Instant::now() + interval;
    for i in 0..sends {
        let due = begin + interval.mul_f64(i as f64);
        if let Some(wait) = (due - spin)
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        {
            let spec = Itimerspec {
                it_interval: Timespec { tv_sec: 0, tv_nsec: 0 },
                it_value: Timespec {
                    tv_sec: wait.as_secs() as _,
                    tv_nsec: wait.subsec_nanos() as _,
                },
            };
            rustix::time::timerfd_settime(&timer, TimerfdTimerFlags::empty(), &spec).expect("timerfd_settime");
            let mut count = [0u8; 8];
            rustix::io::read(&timer, &mut count[..]).expect("read the timerfd");
        }
        let mut now = Instant::now();
        while now < due {
            std::hint::spin_loop();
            now = Instant::now();
        }
        lag.push(now - due);
    }
    lag.sort_unstable();
    let pct = |p: f64| lag[((p * lag.len() as f64) as usize).min(lag.len() - 1)].as_secs_f64() * 1e6;
    println!(
        "sends={} lag_p50_us={:.1} lag_p99_us={:.1}",
        lag.len(),
        pct(0.5),
        pct(0.99)
    );
}

//! `--cpus N|LIST`: the CPUs the client runs on. The process is restricted to them (every
//! thread it starts after inherits the mask), the runtime gets one worker per CPU, and each
//! open-loop stage one dispatcher per CPU, each following an interleaved slice of the
//! schedule, so sending, reading and decoding spread over the CPUs given.

/// What `--cpus` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuSpec {
    /// The first N CPUs this process may use.
    Count(usize),
    /// These CPUs (`0,2-3`), sorted, without repeats.
    List(Vec<usize>),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpusError {
    #[error("`{0}` is not a CPU count or list (e.g. `4` or `0,2-3`)")]
    Syntax(String),
    #[error("asks for {}; this process may use {allowed}", crate::units::counted(*.asked as u64, "CPU", "CPUs"))]
    TooMany { asked: usize, allowed: usize },
    #[error("CPU {cpu} is not one this process may use ({allowed})")]
    NotAllowed { cpu: usize, allowed: String },
    #[error("cannot restrict the process to CPUs {cpus}: {reason}")]
    Affinity { cpus: String, reason: String },
    #[error("--cpus needs Linux (sched_setaffinity)")]
    Unsupported,
}

impl std::str::FromStr for CpuSpec {
    type Err = CpusError;

    fn from_str(s: &str) -> Result<Self, CpusError> {
        let bad = || CpusError::Syntax(s.to_string());
        let s = s.trim();
        if !s.contains([',', '-']) {
            let n: usize = s.parse().map_err(|_| bad())?;
            return if n == 0 {
                Err(bad())
            } else {
                Ok(CpuSpec::Count(n))
            };
        }
        let mut cpus = Vec::new();
        for part in s.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part.trim(), part.trim()),
            };
            let a: usize = a.parse().map_err(|_| bad())?;
            let b: usize = b.parse().map_err(|_| bad())?;
            // CPU_SETSIZE: the most a cpu_set_t holds.
            if a > b || b >= 1024 {
                return Err(bad());
            }
            cpus.extend(a..=b);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSpec::List(cpus))
    }
}

impl CpuSpec {
    /// The CPUs meant, among those this process may use (`allowed`, in order).
    pub fn resolve(&self, allowed: &[usize]) -> Result<Vec<usize>, CpusError> {
        match self {
            CpuSpec::Count(n) if *n > allowed.len() => Err(CpusError::TooMany {
                asked: *n,
                allowed: allowed.len(),
            }),
            CpuSpec::Count(n) => Ok(allowed[..*n].to_vec()),
            CpuSpec::List(cpus) => {
                if let Some(&cpu) = cpus.iter().find(|c| !allowed.contains(c)) {
                    return Err(CpusError::NotAllowed {
                        cpu,
                        allowed: shown(allowed),
                    });
                }
                Ok(cpus.clone())
            }
        }
    }
}

/// `0,1,2` as text.
fn shown(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Restricts the calling thread, and every thread it starts from now on, to `spec`'s CPUs;
/// which they are.
#[cfg(target_os = "linux")]
pub fn restrict(spec: &CpuSpec) -> Result<Vec<usize>, CpusError> {
    let allowed = super::cpu::allowed_cpus().ok_or(CpusError::Unsupported)?;
    let cpus = spec.resolve(&allowed)?;
    // SAFETY: cpu_set_t is plain data; CPU_SET is given indices below CPU_SETSIZE (checked
    // when parsed, or taken from the kernel's own mask).
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in &cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(CpusError::Affinity {
            cpus: shown(&cpus),
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    Ok(cpus)
}

#[cfg(not(target_os = "linux"))]
pub fn restrict(_: &CpuSpec) -> Result<Vec<usize>, CpusError> {
    Err(CpusError::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_lists_parse() {
        assert_eq!("4".parse(), Ok(CpuSpec::Count(4)));
        assert_eq!("0,2-3".parse(), Ok(CpuSpec::List(vec![0, 2, 3])));
        assert_eq!("3,1,1-2".parse(), Ok(CpuSpec::List(vec![1, 2, 3])));
        for bad in ["0", "", "x", "2-1", "1,,2", "-3", "0-5000"] {
            assert!(bad.parse::<CpuSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_spec_resolves_against_the_allowed_cpus() {
        let allowed = [2, 3, 5, 7];
        assert_eq!(CpuSpec::Count(2).resolve(&allowed), Ok(vec![2, 3]));
        assert_eq!(
            CpuSpec::Count(5).resolve(&allowed),
            Err(CpusError::TooMany {
                asked: 5,
                allowed: 4
            })
        );
        assert_eq!(CpuSpec::List(vec![3, 7]).resolve(&allowed), Ok(vec![3, 7]));
        assert!(matches!(
            CpuSpec::List(vec![4]).resolve(&allowed),
            Err(CpusError::NotAllowed { cpu: 4, .. })
        ));
    }
}

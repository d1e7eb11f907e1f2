//! `browser_snapshot {diff: true}`: only the lines that changed since the
//! tab's last snapshot, so an agent polling a page pays for what moved.

/// Lines of `new` not in `old` (`+ `) and of `old` not in `new` (`- `), in
/// page order, by a longest-common-subsequence match. Large trees fall back
/// to a multiset comparison (same answer for moved-free changes).
pub fn diff_lines(old: &[String], new: &[String]) -> Vec<String> {
    // Trim the common head and tail first: most updates touch a small middle.
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old_rest, new_rest) = (&old[head..], &new[head..]);
    let tail = old_rest
        .iter()
        .rev()
        .zip(new_rest.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let a = &old_rest[..old_rest.len() - tail];
    let b = &new_rest[..new_rest.len() - tail];
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        return multiset_diff(a, b);
    }
    // LCS table over the differing middle.
    let (n, m) = (a.len(), b.len());
    let mut t = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[at(i, j)] = if a[i] == b[j] {
                t[at(i + 1, j + 1)] + 1
            } else {
                t[at(i + 1, j)].max(t[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || t[at(i, j + 1)] >= t[at(i + 1, j)]) {
            out.push(format!("+ {}", b[j]));
            j += 1;
        } else {
            out.push(format!("- {}", a[i]));
            i += 1;
        }
    }
    out
}

fn multiset_diff(a: &[String], b: &[String]) -> Vec<String> {
    let mut left: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for l in a {
        *left.entry(l).or_default() += 1;
    }
    let mut out = Vec::new();
    for l in b {
        match left.get_mut(l.as_str()) {
            Some(c) if *c > 0 => *c -= 1,
            _ => out.push(format!("+ {l}")),
        }
    }
    let mut right: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for l in b {
        *right.entry(l).or_default() += 1;
    }
    for l in a {
        match right.get_mut(l.as_str()) {
            Some(c) if *c > 0 => *c -= 1,
            _ => out.push(format!("- {l}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn reports_only_changed_lines_in_order() {
        let old = v(&["- heading \"Cart\"", "- text: 0 items", "- button \"Buy\""]);
        let new = v(&[
            "- heading \"Cart\"",
            "- text: 1 item",
            "- listitem: Tea",
            "- button \"Buy\"",
        ]);
        assert_eq!(
            diff_lines(&old, &new),
            v(&["+ - text: 1 item", "+ - listitem: Tea", "- - text: 0 items"])
        );
        assert!(diff_lines(&new, &new).is_empty());
    }

    #[test]
    fn large_inputs_fall_back_to_counts() {
        let old: Vec<String> = (0..3000).map(|i| format!("line {i}")).collect();
        let mut new = old.clone();
        new.reverse();
        new.push("line new".into());
        let d = diff_lines(&old, &new);
        assert_eq!(d, v(&["+ line new"]));
    }
}

use super::*;

#[test]
fn times_are_rfc3339_in_utc() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(1_764_646_445_678_000_000), "2025-12-02T03:34:05.678Z");
}

#[test]
fn a_file_is_rotated_by_size_keeping_the_newest() {
    let dir = std::env::temp_dir().join(format!("spillway-reqlog-{}-{}", std::process::id(), fastrand::u64(..)));
    let path = dir.join("requests.jsonl");
    let mut r = Rotating { path: path.clone(), file: None, size: 0, max_size: 100, keep: 2 };
    for i in 0..8 {
        r.write(format!("{{\"n\":{i:040}}}\n").as_bytes()).unwrap();
    }
    r.flush().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    // 47-byte lines, two to a file: 6,7 in the file; 4,5 in .1; 2,3 in .2; 0,1 gone.
    assert_eq!(read(&path).lines().count(), 2);
    assert!(read(&path).contains(&format!("{:040}", 7)));
    assert!(read(&numbered(&path, 1)).contains(&format!("{:040}", 5)));
    assert!(read(&numbered(&path, 2)).contains(&format!("{:040}", 3)));
    assert!(!numbered(&path, 3).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

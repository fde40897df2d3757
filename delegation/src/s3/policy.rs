//! The inline session policy that narrows an assumed role to a table's prefixes.

use serde_json::{Value, json};

use super::S3Prefix;
use crate::Access;

/// Object actions a reader gets on keys below its prefixes.
const READ_OBJECTS: &[&str] = &["s3:GetObject", "s3:GetObjectVersion"];
/// What a writer gets on top: writes, deletes, and the parts of multipart uploads that are
/// not plain `PutObject` (an engine aborting a failed upload).
const WRITE_OBJECTS: &[&str] = &[
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
];

/// The IAM policy document passed as `Policy` to `AssumeRole`: the credentials it yields can
/// do at most what both the role and this document allow. `partition` is the ARN partition of
/// the role (`aws`, `aws-cn`, `aws-us-gov`).
///
/// Per bucket: object actions on `arn:<partition>:s3:::bucket/prefix/*` for each prefix, and
/// `s3:ListBucket` on the bucket only for listings whose `s3:prefix` is below one of the
/// prefixes (`prefix/*`; a bare `prefix` would also list `prefix-other/`). Deterministic: the
/// same prefixes and access always give the same bytes, which the credential cache relies on.
pub fn session_policy(partition: &str, prefixes: &[S3Prefix], access: Access) -> Value {
    let mut prefixes = prefixes.to_vec();
    prefixes.sort();
    prefixes.dedup();
    let mut actions: Vec<&str> = READ_OBJECTS.to_vec();
    if access == Access::ReadWrite {
        actions.extend_from_slice(WRITE_OBJECTS);
    }
    let objects: Vec<String> = prefixes
        .iter()
        .map(|p| format!("arn:{partition}:s3:::{}/{}/*", p.bucket, p.key))
        .collect();
    let mut statements = vec![json!({
        "Effect": "Allow",
        "Action": actions,
        "Resource": objects,
    })];
    let mut buckets: Vec<&str> = prefixes.iter().map(|p| p.bucket.as_str()).collect();
    buckets.dedup();
    for bucket in buckets {
        let listed: Vec<String> = prefixes
            .iter()
            .filter(|p| p.bucket == bucket)
            .map(|p| format!("{}/*", p.key))
            .collect();
        statements.push(json!({
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [format!("arn:{partition}:s3:::{bucket}")],
            "Condition": {"StringLike": {"s3:prefix": listed}},
        }));
        statements.push(json!({
            "Effect": "Allow",
            "Action": ["s3:GetBucketLocation"],
            "Resource": [format!("arn:{partition}:s3:::{bucket}")],
        }));
    }
    json!({"Version": "2012-10-17", "Statement": statements})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(location: &str) -> S3Prefix {
        S3Prefix::parse(location).unwrap()
    }

    #[test]
    fn a_reader_may_get_and_list_below_its_prefix_only() {
        let policy = session_policy("aws", &[prefix("s3://lake/wh/db/t")], Access::Read);
        assert_eq!(
            policy,
            json!({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                 "Resource": ["arn:aws:s3:::lake/wh/db/t/*"]},
                {"Effect": "Allow", "Action": ["s3:ListBucket"],
                 "Resource": ["arn:aws:s3:::lake"],
                 "Condition": {"StringLike": {"s3:prefix": ["wh/db/t/*"]}}},
                {"Effect": "Allow", "Action": ["s3:GetBucketLocation"],
                 "Resource": ["arn:aws:s3:::lake"]},
            ]})
        );
    }

    #[test]
    fn a_writer_may_also_put_and_delete_in_every_prefix() {
        let policy = session_policy(
            "aws-cn",
            &[
                prefix("s3://lake/wh/t/meta"),
                prefix("s3://lake/wh/t"),
                prefix("s3://other/data/t"),
                prefix("s3://lake/wh/t"),
            ],
            Access::ReadWrite,
        );
        assert_eq!(
            policy["Statement"][0],
            json!({"Effect": "Allow",
                   "Action": ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject",
                              "s3:DeleteObject", "s3:AbortMultipartUpload",
                              "s3:ListMultipartUploadParts"],
                   "Resource": ["arn:aws-cn:s3:::lake/wh/t/*", "arn:aws-cn:s3:::lake/wh/t/meta/*",
                                "arn:aws-cn:s3:::other/data/t/*"]})
        );
        assert_eq!(
            policy["Statement"][1]["Condition"]["StringLike"]["s3:prefix"],
            json!(["wh/t/*", "wh/t/meta/*"])
        );
        assert_eq!(
            policy["Statement"][3]["Resource"],
            json!(["arn:aws-cn:s3:::other"])
        );
        assert_eq!(policy["Statement"].as_array().unwrap().len(), 5);
    }
}

//! Positive and negative cases for the data conventions (checklist D-2..D-16) and the strict
//! Ed25519 / Registry rules (§6.4, S-1..S-5), beyond the official vectors. Runs natively and,
//! through wasm-bindgen-test, in headless Chromium.

#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

macro_rules! cases {
    ($($name:ident $body:block)*) => {$(
        #[cfg_attr(not(target_arch = "wasm32"), test)]
        #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
        fn $name() $body
    )*};
}

use wasm_core::crypto::ed25519::{EncodingError, StrictPublicKey, StrictSignature, sign, verify};
use wasm_core::crypto::registry::{
    BindingError, BindingRecord, RegistryError, RegistryEvidence, StatusRecord,
};
use wasm_core::encoding::{
    Base64Error, b64url_decode, b64url_encode, hex, is_sha256_hash, sha256_hash,
};
use wasm_core::id::{IdError, check_id, is_absolute_uri};
use wasm_core::json::{self, JcsError, ParseErrorKind, Value, canonicalize};
use wasm_core::time::{Timestamp, TimestampError, format_utc};

fn jcs(text: &str) -> String {
    let v = json::parse_str(text).expect("test input parses");
    String::from_utf8(canonicalize(&v).expect("canonicalizes")).expect("utf-8")
}

fn parse_err(bytes: &[u8]) -> ParseErrorKind {
    json::parse(bytes).expect_err("must be rejected").kind
}

cases! {
    // ---- D-2 strict parsing -------------------------------------------------------------
    d2_accepts_one_value_and_keeps_member_order {
        let v = json::parse_str(" {\"b\":[1,2.50,\"x\"],\"a\":{\"z\":null,\"y\":true}} \n").unwrap();
        assert_eq!(json::to_string(&v), r#"{"b":[1,2.50,"x"],"a":{"z":null,"y":true}}"#);
    }
    d2_rejects_bom_trailing_data_and_empty_input {
        assert_eq!(parse_err(b"\xEF\xBB\xBF{}"), ParseErrorKind::ByteOrderMark);
        assert_eq!(parse_err(b"{} {}"), ParseErrorKind::TrailingData);
        assert_eq!(parse_err(b"{}x"), ParseErrorKind::TrailingData);
        assert_eq!(parse_err(b""), ParseErrorKind::Empty);
        assert_eq!(parse_err(b"  \n"), ParseErrorKind::Empty);
    }
    d2_rejects_invalid_utf8_with_its_offset {
        let e = json::parse(b"{\"a\":\"\xC3\x28\"}").unwrap_err();
        assert_eq!((e.kind, e.offset), (ParseErrorKind::InvalidUtf8, 6));
        assert_eq!(parse_err(b"\"\xED\xA0\x80\""), ParseErrorKind::InvalidUtf8); // CESU surrogate
    }
    d2_rejects_non_json_numbers_and_literals {
        for bad in ["NaN", "Infinity", "-Infinity", "01", "1.", ".5", "+1", "1e", "-", "0x10", "tru", "nul"] {
            assert!(json::parse_str(bad).is_err(), "{bad} must be rejected");
        }
        for good in ["0", "-0", "1.5e-3", "1E+2", "-0.0"] {
            assert!(json::parse_str(good).is_ok(), "{good} must parse");
        }
    }
    d2_rejects_bad_strings {
        assert_eq!(parse_err(b"\"a\x01\""), ParseErrorKind::ControlCharacterInString);
        assert_eq!(parse_err(b"\"\\x\""), ParseErrorKind::InvalidEscape);
        assert_eq!(parse_err(b"\"\\u12G4\""), ParseErrorKind::InvalidEscape);
        assert_eq!(parse_err(b"'a'"), ParseErrorKind::UnexpectedByte(b'\''));
        assert_eq!(parse_err(b"\"abc"), ParseErrorKind::UnexpectedEnd);
    }
    d2_duplicate_members_after_escape_decoding_at_any_depth {
        let dup = |t: &str| matches!(parse_err(t.as_bytes()), ParseErrorKind::DuplicateMember(_));
        assert!(dup(r#"{"payload":1,"pay\u006coad":2}"#));
        assert!(dup(r#"{"x":[{"ok":1},{"b":1,"b":1}]}"#));
        assert!(dup(r#"{"a":{"b":{"c":{"d":{"e":1,"\u0065":2}}}}}"#));
        assert!(dup(r#"{"😀":1,"\ud83d\ude00":2}"#));
        assert!(dup(r#"{"\ud800":1,"\ud800":2}"#));
        // The same name in different objects, and names that differ only after decoding, are fine.
        assert!(json::parse_str(r#"{"a":{"k":1},"b":{"k":1}}"#).is_ok());
        assert!(json::parse_str(r#"{"\ud800":1,"\ud801":2}"#).is_ok());
        assert!(json::parse_str(r#"{"a":1,"A":2}"#).is_ok());
    }
    d2_compact_output_is_lossless {
        for text in [r#"{"a":"\ud800x","\udfff":[1.50,-0,1E400]}"#, r#""\u0000\u001f\"""#, r#"[1e-400,"é"]"#] {
            let v = json::parse_str(text).unwrap();
            assert_eq!(json::parse_str(&json::to_string(&v)).unwrap(), v, "{text}");
        }
    }
    d2_bounds_nesting_depth {
        let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(json::parse_str(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert_eq!(parse_err(deep.as_bytes()), ParseErrorKind::TooDeep);
        // Objects count as arrays do, alone and interleaved with arrays: 128 levels, not 129.
        let objects = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
        assert!(json::parse_str(&objects(128)).is_ok());
        assert_eq!(parse_err(objects(129).as_bytes()), ParseErrorKind::TooDeep);
        let mixed = |n: usize| format!("{}1{}", r#"[{"a":"#.repeat(n / 2), "}]".repeat(n / 2));
        assert!(json::parse_str(&mixed(128)).is_ok());
        let over = format!("{}1{}", r#"[{"a":"#.repeat(64).replacen('[', "[[", 1), "}]".repeat(64) + "]");
        assert_eq!(parse_err(over.as_bytes()), ParseErrorKind::TooDeep);
    }

    // ---- D-3 JCS --------------------------------------------------------------------------
    d3_number_serialization_is_ecmascript {
        for (input, want) in [
            ("1e30", "1e+30"), ("1E30", "1e+30"), ("1e-07", "1e-7"), ("-0", "0"), ("-0.0", "0"),
            ("333333333.33333329", "333333333.3333333"), ("4.50", "4.5"), ("2e-3", "0.002"),
            ("0.000001", "0.000001"), ("1e21", "1e+21"), ("1e20", "100000000000000000000"),
            ("9007199254740993", "9007199254740992"), ("1e-400", "0"), ("123456789012345678901", "123456789012345680000"),
            ("0.1", "0.1"), ("5e-324", "5e-324"), ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ] {
            assert_eq!(jcs(input), want, "{input}");
        }
    }
    d3_values_outside_the_data_model_fail_at_canonicalization_not_parse {
        for big in ["1e400", "-1e400", "1.8e308"] {
            let v = json::parse_str(big).expect("a JSON number parses");
            assert!(matches!(canonicalize(&v), Err(JcsError::NonFiniteNumber { .. })), "{big}");
        }
        let v = json::parse_str(r#"{"a":["ok","\udc00x"]}"#).expect("lone surrogate parses");
        match canonicalize(&v) {
            Err(JcsError::UnpairedSurrogate { pointer }) => assert_eq!(pointer, "/a/1"),
            other => panic!("{other:?}"),
        }
        let k = json::parse_str(r#"{"\ud800":1}"#).unwrap();
        assert!(matches!(canonicalize(&k), Err(JcsError::UnpairedSurrogate { .. })));
        // A well-formed pair is fine.
        assert_eq!(jcs(r#""\ud83d\ude00""#), "\"😀\"");
    }
    d3_keys_sort_by_utf16_code_units {
        // RFC 8785 §3.2.3's example: U+1F600 (D83D DE00) sorts before U+FB33.
        let input = r#"{"\u20ac":"Euro","\r":"CR","\ufb33":"Hebrew","1":"One","\ud83d\ude00":"Smiley","\u0080":"Ctl","\u00f6":"o"}"#;
        assert_eq!(
            jcs(input),
            "{\"\\r\":\"CR\",\"1\":\"One\",\"\u{80}\":\"Ctl\",\"ö\":\"o\",\"€\":\"Euro\",\"😀\":\"Smiley\",\"\u{fb33}\":\"Hebrew\"}"
        );
        // The golden-vector pair: a byte or scalar sort would put U+E000 first.
        assert_eq!(jcs(r#"{"\ue000":1,"😀":2}"#), "{\"😀\":2,\"\u{e000}\":1}");
    }
    d3_strings_use_minimal_escapes {
        assert_eq!(jcs(r#""\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/""#), r#""€$\u000f\nA'B\"\\\\\"/""#);
        assert_eq!(jcs("\"\\u007f\\u2028</\""), "\"\u{7f}\u{2028}</\"");
        assert_eq!(jcs(r#""\b\f\t\r\u0000""#), r#""\b\f\t\r\u0000""#);
    }
    d3_signing_input_omits_only_the_top_level_signature {
        let v = json::parse_str(r#"{"signature":{"x":1},"b":{"signature":"kept"},"a":1}"#).unwrap();
        let bytes = json::canonicalize_without(&v, "signature").unwrap();
        assert_eq!(bytes, br#"{"a":1,"b":{"signature":"kept"}}"#);
    }

    // ---- D-5..D-9 timestamps ----------------------------------------------------------------
    d7_fractions_compare_exactly_beyond_nanoseconds {
        let a = Timestamp::parse_profile("2026-07-15T00:00:00.1234560000000000001Z").unwrap();
        let b = Timestamp::parse_profile("2026-07-15T00:00:00.1234560000000000002Z").unwrap();
        assert!(a.instant() < b.instant());
        let c = Timestamp::parse_profile("2026-07-15T00:00:00.5Z").unwrap();
        let d = Timestamp::parse_profile("2026-07-15T00:00:00.500000000000000000000Z").unwrap();
        assert_eq!(c.instant(), d.instant());
        assert_ne!(c, d, "the spelling is kept (D-6)");
        let whole = Timestamp::parse_profile("2026-07-15T00:00:00Z").unwrap();
        let zero = Timestamp::parse_profile("2026-07-15T00:00:00.000Z").unwrap();
        assert_eq!(whole.instant(), zero.instant());
    }
    d5_offsets_and_case {
        let z = Timestamp::parse_profile("2026-07-15T00:00:00Z").unwrap();
        let plus8 = Timestamp::parse_profile("2026-07-15T08:00:00+08:00").unwrap();
        assert_eq!(z.instant(), plus8.instant());
        let lower = Timestamp::parse_profile("2026-07-15t00:00:00z").unwrap();
        assert_eq!(lower.instant(), z.instant());
        assert!(!lower.is_utc_upper_z());
        assert!(Timestamp::parse_profile("2026-07-15T00:00:00-23:59").is_ok());
        assert!(Timestamp::parse_profile("2026-07-15T00:00:00+23:59").is_ok());
        assert_eq!(Timestamp::parse_profile("2026-07-15T00:00:00+24:00").unwrap_err(), TimestampError::InvalidOffset);
        assert!(!Timestamp::parse_profile("2026-07-15T00:00:00+00:00").unwrap().is_utc_upper_z());
    }
    d5_profile_rejects_what_generic_rfc3339_allows {
        assert!(Timestamp::parse_rfc3339("2026-06-30T23:59:60Z").is_ok());
        assert_eq!(Timestamp::parse_profile("2026-06-30T23:59:60Z").unwrap_err(), TimestampError::LeapSecond);
        assert!(Timestamp::parse_rfc3339("0000-01-01T00:00:00Z").is_ok());
        assert_eq!(Timestamp::parse_profile("0000-01-01T00:00:00Z").unwrap_err(), TimestampError::YearZero);
        assert!(Timestamp::parse_profile("0001-01-01T00:00:00Z").is_ok());
        assert!(Timestamp::parse_rfc3339("2026-07-15T00:00:00-00:00").is_ok());
        assert_eq!(Timestamp::parse_profile("2026-07-15T00:00:00-00:00").unwrap_err(), TimestampError::UnknownLocalOffset);
    }
    d5_calendar_and_syntax {
        assert!(Timestamp::parse_profile("2024-02-29T00:00:00Z").is_ok());
        assert!(Timestamp::parse_profile("2000-02-29T00:00:00Z").is_ok());
        for bad in ["2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
                    "2026-07-00T00:00:00Z", "2026-00-01T00:00:00Z", "2026-00-00T00:00:00Z"] {
            assert_eq!(Timestamp::parse_profile(bad).unwrap_err(), TimestampError::InvalidDate, "{bad}");
        }
        for bad in ["2026-07-15", "2026-07-15T00:00Z", "2026-07-15 00:00:00Z", "2026-07-15T00:00:00.Z",
                    "2026-07-15T00:00:00", "2026-07-15T00:00:00Z\n", "26-07-15T00:00:00Z", "2026-07-15T00:00:00+0800"] {
            assert!(Timestamp::parse_profile(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Timestamp::parse_profile("2026-07-15T24:00:00Z").unwrap_err(), TimestampError::InvalidTime);
    }
    d5_year_zero_is_on_the_proleptic_calendar {
        // RFC 3339 date-times (outside the §2 profile, which starts at 0001) reach year 0000, a
        // leap year whose January and February count in the era before 0000-03-01
        // (days_from_civil's negative-year branch): −62,167,219,200 s is 0000-01-01T00:00:00Z.
        for (text, secs) in [("0000-01-01T00:00:00Z", -62_167_219_200i64),
                             ("0000-02-29T00:00:00Z", -62_167_219_200 + 59 * 86_400),
                             ("0000-03-01T00:00:00Z", -62_167_219_200 + 60 * 86_400),
                             ("0001-01-01T00:00:00Z", -62_135_596_800)] {
            assert_eq!(Timestamp::parse_rfc3339(text).unwrap().instant().seconds, secs, "{text}");
            assert_eq!(format_utc(secs), text);
        }
    }
    format_utc_round_trips {
        for secs in [0i64, 1_784_073_600, -86_400, 253_402_300_799] {
            let t = Timestamp::parse_profile(&format_utc(secs)).unwrap();
            assert_eq!(t.instant().seconds, secs);
        }
    }

    // ---- D-10..D-12 identifiers --------------------------------------------------------------
    d10_absolute_uris {
        for ok in ["example:", "urn:uuid:11111111-2222-4333-8444-555555555555", "https://example.com:8080/a/b?c=d#e",
                   "http://[::1]/x", "http://[2001:db8::7]/", "http://[::ffff:192.168.1.1]/", "http://[v7.fe:1]/",
                   "http://[V1A.x]/", "urn:x:%41%2f", "mailto:a@b.c", "file:///tmp/x", "a+b-c.d:rest"] {
            assert!(is_absolute_uri(ok), "{ok}");
        }
        for bad in ["actions/x", "/abs/path", "https://例え.テスト/", "urn:x:a b", "urn:x:y\n", "urn:x:%GG", "urn:x:%4",
                    "http://[::ffff:192.168.01.1]/", "http://[1:2:3:4:5:6:7:8:9]/", "http://[::1::2]/", "http://[v.x]/",
                    "1abc:x", ":x", "", "http://host:80a/", "urn:x:<y>", "urn:x:a\"b", "http://a/[b]", "urn:x#a#b"] {
            assert!(!is_absolute_uri(bad), "{bad:?}");
        }
    }
    d10_ip_literals_each_rule {
        // RFC 3986 IP-literal: every group counts (eight without `::`), an IPv4 tail counts
        // two, a group is 1–4 hex digits, and IPvFuture needs something after its dot.
        for ok in ["http://[1:2:3:4:5:6:7:8]/", "http://[1:2:3:4:5:6:1.2.3.4]/", "http://[1:2:3:4:5::1.2.3.4]/",
                   "http://[abcd::]/", "http://[v1.x]/"] {
            assert!(is_absolute_uri(ok), "{ok}");
        }
        for bad in ["http://[1:2:3:4:5:6:7]/", "http://[1:2:3:4:5:6:7:]/", "http://[:1:2:3:4:5:6:7]/",
                    "http://[12345::1]/", "http://[::g]/", "http://[1:2:3:4:5:6:7:1.2.3.4]/", "http://[v1.]/",
                    "http://[1:2:3:4:5:6:1.2.3]/"] {
            assert!(!is_absolute_uri(bad), "{bad:?}");
        }
    }
    d10_protocol_ids_are_limited_to_512_characters {
        let long = format!("urn:x:{}", "a".repeat(506));
        assert_eq!(long.len(), 512);
        assert!(check_id(&long).is_ok());
        let longer = format!("{long}a");
        assert_eq!(check_id(&longer), Err(IdError::TooLong(513)));
        assert!(is_absolute_uri(&longer), "Registry semantics have no length limit");
    }

    d10_ids_that_the_plain_shortcut_does_not_decide {
        // 512 characters, not of the plain shape (a query): the full check's limit is inclusive.
        let at_limit = format!("urn:x?{}", "a".repeat(506));
        assert_eq!(at_limit.chars().count(), 512);
        assert_eq!(check_id(&at_limit), Ok(()));
        // Plain characters only, but a `//` authority with a port that is not digits: the
        // shortcut must not take it (its path starts after the colon), and the full check refuses.
        assert_eq!(check_id("a://host:x"), Err(IdError::NotAbsoluteUri));
        assert!(!is_absolute_uri("a://host:x"));
        // The query starts after its `?`: the `]` before it belongs to the authority.
        assert!(is_absolute_uri("http://[::1]?q"));
        // A `%` escape is three bytes; the byte after it is checked like any other.
        assert!(!is_absolute_uri("urn:x:%41^"));
        assert!(is_absolute_uri("urn:x:%41b"));
    }

    d14_hex_is_lower_case_two_digits_per_byte {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(sha256_hash(b"").strip_prefix("sha256:"), Some(hex(&[0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55]).as_str()));
    }

    // ---- D-13 / D-14 base64url and hashes -------------------------------------------------------
    d13_base64url_is_canonical {
        for len in 0..40usize {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(b64url_decode(&b64url_encode(&data)).unwrap(), data);
        }
        assert_eq!(b64url_decode("AA"), Ok(vec![0]));
        assert_eq!(b64url_decode("AB"), Err(Base64Error::NonzeroPadBits));
        assert_eq!(b64url_decode("AAB"), Err(Base64Error::NonzeroPadBits));
        assert_eq!(b64url_decode("AA=="), Err(Base64Error::InvalidCharacter { index: 2 }));
        assert_eq!(b64url_decode("A+/A"), Err(Base64Error::InvalidCharacter { index: 1 }));
        assert_eq!(b64url_decode("AAAAA"), Err(Base64Error::InvalidLength));
    }
    d14_sha256_form {
        let h = sha256_hash(b"abc");
        assert_eq!(h, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert!(is_sha256_hash(&h));
        assert!(!is_sha256_hash(&h.to_uppercase()));
        assert!(!is_sha256_hash("sha256:abc"));
        assert!(!is_sha256_hash(&h.replace("sha256:", "sha512:")));
    }

    // ---- §6.4 strict Ed25519 --------------------------------------------------------------------
    ed25519_public_keys_must_be_canonical_prime_order_and_not_identity {
        let seed = wasm_core::crypto::SecretSeed::take(&mut [42u8; 32]);
        let pk = wasm_core::crypto::ed25519::public_key_of(&seed);
        assert!(StrictPublicKey::from_bytes(&pk).is_ok());
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(StrictPublicKey::from_bytes(&identity).unwrap_err(), EncodingError::Identity);
        let mut neg_zero = identity;
        neg_zero[31] |= 0x80;
        assert_eq!(StrictPublicKey::from_bytes(&neg_zero).unwrap_err(), EncodingError::NonCanonical);
        // y = -1: the point (0, -1) of order 2.
        let mut order2 = [0xffu8; 32];
        order2[0] = 0xec;
        order2[31] = 0x7f;
        assert_eq!(StrictPublicKey::from_bytes(&order2).unwrap_err(), EncodingError::NotPrimeOrder);
        // y = p + 1 (noncanonical spelling of y = 1, the identity).
        let mut y_p1 = [0xffu8; 32];
        y_p1[0] = 0xee;
        y_p1[31] = 0x7f;
        assert_eq!(StrictPublicKey::from_bytes(&y_p1).unwrap_err(), EncodingError::NonCanonical);
        // y = 2 is not on the curve.
        let mut y2 = [0u8; 32];
        y2[0] = 2;
        assert_eq!(StrictPublicKey::from_bytes(&y2).unwrap_err(), EncodingError::OffCurve);
        assert_eq!(StrictPublicKey::from_bytes(&pk[..31]).unwrap_err(), EncodingError::WrongLength);
        // Mixed order: a prime-order key plus the order-2 point.
        let mixed = mixed_order(&pk);
        assert_eq!(StrictPublicKey::from_bytes(&mixed).unwrap_err(), EncodingError::NotPrimeOrder);
    }
    ed25519_signature_encoding_rules {
        let seed = wasm_core::crypto::SecretSeed::take(&mut [9u8; 32]);
        let msg = b"signing bytes";
        let sig = sign(&seed, msg);
        let key = StrictPublicKey::from_bytes(&wasm_core::crypto::ed25519::public_key_of(&seed)).unwrap();
        assert!(verify(&key, &StrictSignature::from_bytes(&sig).unwrap(), msg));
        assert!(!verify(&key, &StrictSignature::from_bytes(&sig).unwrap(), b"signing byteZ"));
        // S = L is out of range and never reduced.
        let l: [u8; 32] = [0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10];
        let mut s_eq_l = sig;
        s_eq_l[32..].copy_from_slice(&l);
        assert_eq!(StrictSignature::from_bytes(&s_eq_l).unwrap_err(), EncodingError::ScalarOutOfRange);
        // The identity R is permitted at stage 3 (and then fails the equation).
        let mut identity_r = sig;
        identity_r[..32].copy_from_slice(&{ let mut b = [0u8; 32]; b[0] = 1; b });
        let s = StrictSignature::from_bytes(&identity_r).expect("identity R allowed");
        assert!(!verify(&key, &s, msg));
        // A small-order R is not.
        let mut small_r = sig;
        small_r[..32].copy_from_slice(&{ let mut b = [0xffu8; 32]; b[0] = 0xec; b[31] = 0x7f; b });
        assert_eq!(StrictSignature::from_bytes(&small_r).unwrap_err(), EncodingError::NotPrimeOrder);
        assert_eq!(StrictSignature::from_bytes(&sig[..63]).unwrap_err(), EncodingError::WrongLength);
    }

    // ---- S-1..S-5 Registry evidence -------------------------------------------------------------
    registry_accepts_identical_repeats_and_enforces_half_open_intervals {
        let mut ev = evidence();
        ev.bindings.push(ev.bindings[0].clone());
        let reg = ev.validate().expect("identical repeat is one logical binding");
        let b = reg.binding("urn:k:a").unwrap();
        let at = |s: &str| Timestamp::parse_profile(s).unwrap().instant().clone();
        assert!(b.valid_at(&at("2026-07-01T00:00:00Z")));
        assert!(!b.valid_at(&at("2026-06-30T23:59:59.999999999999Z")));
        assert!(b.valid_at(&at("2026-07-31T23:59:59.9999999999999Z")));
        assert!(!b.valid_at(&at("2026-08-01T00:00:00Z")), "validUntil is exclusive");
        assert!(!b.valid_at(&at("2026-08-01T00:00:00.000Z")));
    }
    registry_rejects_rebinding_alias_and_reuse {
        let mut rebind = evidence();
        let mut other = rebind.bindings[1].clone();
        other.key_id = "urn:k:a".into();
        rebind.bindings.push(other);
        assert!(matches!(rebind.validate(), Err(RegistryError::Rebound { index: 2, .. })));
        let mut alias = evidence();
        let mut dup = alias.bindings[0].clone();
        dup.key_id = "urn:k:alias".into();
        alias.bindings.push(dup);
        assert!(alias.validate().unwrap_err().to_string().contains("key reuse or key-ID alias"));
        let mut reuse = evidence();
        let mut dup = reuse.bindings[0].clone();
        dup.key_id = "urn:k:c".into();
        dup.principal_id = "urn:agent:impostor".into();
        reuse.bindings.push(dup);
        assert!(reuse.validate().is_err());
    }
    registry_history_is_append_only {
        let mut later = evidence();
        later.bindings[0].validity_history.push(StatusRecord {
            sequence: 2, recorded_at: "2026-07-20T00:00:00Z".into(), valid_until: Some("2026-09-01T00:00:00Z".into()), revoked_at: None,
        });
        assert!(matches!(later.validate(), Err(RegistryError::Binding { reason: BindingError::BoundaryLater { sequence: 2, what: "validUntil" }, .. })));
        let mut earlier = evidence();
        earlier.bindings[0].validity_history.push(StatusRecord {
            sequence: 2, recorded_at: "2026-07-20T00:00:00Z".into(), valid_until: Some("2026-07-25T00:00:00Z".into()), revoked_at: None,
        });
        let reg = earlier.validate().expect("moving validUntil earlier is allowed");
        assert_eq!(reg.binding("urn:k:a").unwrap().valid_until.as_ref().unwrap().as_str(), "2026-07-25T00:00:00Z");
        let mut gap = evidence();
        gap.bindings[0].validity_history[0].sequence = 2;
        assert!(matches!(gap.validate(), Err(RegistryError::Binding { reason: BindingError::HistoryGap { sequence: 2, position: 0 }, .. })));
        let mut backwards = evidence();
        backwards.bindings[0].validity_history.push(StatusRecord {
            sequence: 2, recorded_at: "2026-07-01T00:00:00Z".into(), valid_until: None, revoked_at: Some("2026-07-02T00:00:00Z".into()),
        });
        assert!(matches!(backwards.validate(), Err(RegistryError::Binding { reason: BindingError::RecordedBackwards { sequence: 2 }, .. })));
    }
    registry_validates_unrelated_bindings_too {
        for mutate in [
            (|b: &mut BindingRecord| b.key_id.push('\n')) as fn(&mut BindingRecord),
            |b| b.principal_id = "urn:x:%GG".into(),
            |b| b.algorithm = "Ed448".into(),
            |b| b.public_key.push_str("=="),
            |b| b.valid_from = "2026-07-01T00:00:60Z".into(),
        ] {
            let mut ev = evidence();
            mutate(&mut ev.bindings[1]);
            assert!(ev.validate().is_err());
        }
        let mut org = evidence();
        org.organization_id = "acme".into();
        assert!(org.validate().is_err());
    }
}

fn evidence() -> RegistryEvidence {
    let key = |seed: u8| {
        b64url_encode(&wasm_core::crypto::SecretSeed::take(&mut [seed; 32]).public_key())
    };
    RegistryEvidence {
        organization_id: "urn:org:acme".into(),
        bindings: vec![
            BindingRecord {
                key_id: "urn:k:a".into(),
                principal_type: "agent".into(),
                principal_id: "urn:agent:a".into(),
                algorithm: "Ed25519".into(),
                public_key: key(1),
                valid_from: "2026-07-01T08:00:00+08:00".into(),
                validity_history: vec![StatusRecord {
                    sequence: 1,
                    recorded_at: "2026-07-10T00:00:00Z".into(),
                    valid_until: Some("2026-08-01T00:00:00Z".into()),
                    revoked_at: None,
                }],
            },
            BindingRecord {
                key_id: "urn:k:b".into(),
                principal_type: "human".into(),
                principal_id: "urn:human:b".into(),
                algorithm: "Ed25519".into(),
                public_key: key(2),
                valid_from: "2026-07-01T00:00:00Z".into(),
                validity_history: vec![],
            },
        ],
    }
}

/// Adds the order-2 point (0, -1) to a prime-order point: negate x and y (the sum is (-x, -y)).
fn mixed_order(pk: &[u8; 32]) -> [u8; 32] {
    use curve25519_dalek::edwards::CompressedEdwardsY;
    let p = CompressedEdwardsY(*pk).decompress().unwrap();
    let mut t = [0xffu8; 32];
    t[0] = 0xec;
    t[31] = 0x7f;
    let torsion = CompressedEdwardsY(t).decompress().unwrap();
    (p + torsion).compress().to_bytes()
}

#[allow(dead_code)]
fn _uses(_: Value) {}

package org.stratatrace.workloads;

import java.io.File;

import org.apache.spark.storage.StorageLevel;

/** Params are the flags every workload takes. */
final class Params {
    String size = "small";
    int scale = 1;
    int parts = 4;
    /** --storage, or null: every cache keeps the level its own code gives it. */
    String storageName;
    StorageLevel storage;
    File work = new File(System.getProperty("java.io.tmpdir"));
    long seed = 42;

    static Params parse(String[] args) {
        Params p = new Params();
        for (int i = 1; i < args.length; i++) {
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--size":
                    p.size = need(args[i], v);
                    switch (p.size) {
                        case "small": p.scale = 1; break;
                        case "medium": p.scale = 4; break;
                        case "large": p.scale = 16; break;
                        case "xlarge": p.scale = 64; break;
                        default: throw new IllegalArgumentException("--size " + p.size + ": want small, medium, large or xlarge");
                    }
                    i++;
                    break;
                case "--parts":
                    p.parts = Integer.parseInt(need(args[i], v));
                    if (p.parts < 1) {
                        throw new IllegalArgumentException("--parts must be at least 1");
                    }
                    i++;
                    break;
                case "--storage":
                    p.storageName = need(args[i], v);
                    p.storage = StorageLevel.fromString(p.storageName);
                    i++;
                    break;
                case "--work":
                    p.work = new File(need(args[i], v));
                    i++;
                    break;
                default:
                    throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        return p;
    }

    private static String need(String flag, String v) {
        if (v == null) {
            throw new IllegalArgumentException(flag + " needs a value");
        }
        return v;
    }

    /** storage, or own when --storage was not given. */
    StorageLevel or(StorageLevel own) {
        return storage != null ? storage : own;
    }

    /** n scaled by the size. */
    int n(int small) {
        return small * scale;
    }
}

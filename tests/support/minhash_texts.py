"""Texts for the MinHash tests: a base text, a near-duplicate of it, an unrelated one and a Chinese one;
and edge cases (empty, whitespace only, punctuation only, full-width forms, astral Han, odd spaces, Greek
and Turkish letters whose lower case depends on context)."""

from __future__ import annotations

BASE = (
    "The GNU Compiler Collection is a compiler system produced by the GNU Project supporting various "
    "programming languages hardware architectures and operating systems. The Free Software Foundation "
    "distributes GCC as free software under the GNU General Public License and it is a key component "
    "of the GNU toolchain and the standard compiler for most projects related to GNU and the Linux kernel. "
    "With roughly fifteen million lines of code in 2019 GCC is one of the biggest free programs in existence. "
    "It has played an important role in the growth of free software as both a tool and an example. When it "
    "was first released in 1987 by Richard Stallman GCC 1.0 was named the GNU C Compiler since it only "
    "handled the C programming language. It was extended to compile C++ in December of that year."
)


NEAR = BASE.replace("key component", "central component")  # one word changed: Jaccard well above 0.8


OTHER = (
    "curl is a command line tool and library for transferring data with URLs. It supports many protocols "
    "including HTTP HTTPS FTP and more and is used in cars television sets routers printers and phones."
)


CHINESE = (
    "这是一个用于测试近似重复检测的中文软件包描述，它包含足够多的汉字，以便按照字符五元组计算相似度。"
    "该软件包提供了一个命令行工具和一个共享库，用于压缩和解压缩数据，支持多种常见的归档格式。"
    "它被广泛用于操作系统的安装程序、备份工具以及网络传输，以减少存储空间和带宽的占用。"
)


# texts whose lower-casing has context or expands (Greek word-final sigma, Turkish dotted capital I), and
# their all-caps copies
CASED = [
    "Η Ελλάδα είναι χώρα της νοτιοανατολικής Ευρώπης. Οι κάτοικοί της μιλούν ελληνικά.",
    "İstanbul ve İzmir, Türkiye'nin en büyük şehirleri arasındadır.",
]
CASED += [t.upper() for t in CASED]
EDGES = [
    "",
    "   \n\t ",
    "!!! ,,, ???",
    "one",
    "two words",
    "a b c d e f g h",
    "Ｆｕｌｌ-Width «Quotes» ½ ™ and\u00a0no-break\u2003spaces\u3000here",
    "emoji 😀 between 😀 words 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 letters",
    "中文",
    "中文文档，包含 English words 和 `commands --flag`。",
    "日本語のテキストとカタカナ、한국어 텍스트",
    "𠀀𠀁𠀂 astral Han 𠀃𠀄𠀅𠀆",
    "x" * 3000,
    "\u0085next\u2028line\u2029para\u205fmath\u180emongolian",
    *CASED,
]

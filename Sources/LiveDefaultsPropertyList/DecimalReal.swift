/// Decimal text to `Double`, correctly rounded, for the readers' hot paths.
///
/// Most reals in a property list are the shortest text that reads back as the same Double, 15 to
/// 17 significant digits: more than a Double holds exactly, so the simple exact method (one
/// multiplication or division of exact values) does not apply, and the general conversion
/// (`Double(_:)`, a String and `strtod`'s multi-precision arithmetic) costs several hundred
/// instructions a number. The Eisel–Lemire method (Daniel Lemire, "Number Parsing at a Gigabyte
/// per Second", 2021) decides almost every such number with one or two 64×64-bit multiplications
/// by a 128-bit approximation of the power of ten, and says when it cannot (then the caller takes
/// the general path). See docs/design.md, "The codec: the XML
/// decoder".
enum DecimalReal {
    /// The smallest and largest powers of ten in ``powersOfTen``.
    static let smallestExponent = -64
    static let largestExponent = 64

    /// `significand × 10^exponent`, correctly rounded to the nearest Double (ties to even), with
    /// the sign of `negative`; nil when this method cannot decide it (the exponent is outside the
    /// table, the result would be subnormal or infinite, or the product lies too close to a
    /// halfway point), and then the caller converts the text in full.
    @inline(__always)
    static func double(significand: UInt64, exponent: Int, negative: Bool) -> Double? {
        if significand == 0 { return negative ? -0.0 : 0.0 }
        // Both the significand and the power of ten are exact Doubles: one operation rounds once.
        if significand <= 1 << 53, exponent >= -22, exponent <= 22 {
            var value = Double(significand)
            if exponent < 0 {
                value /= exactPowersOfTen[-exponent]
            } else {
                value *= exactPowersOfTen[exponent]
            }
            return negative ? -value : value
        }
        guard exponent >= smallestExponent, exponent <= largestExponent else { return nil }
        return approximated(significand: significand, exponent: exponent, negative: negative)
    }

    /// Powers of ten a Double holds exactly (10^22 is the last).
    static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
        1e19, 1e20, 1e21, 1e22,
    ]

    /// The Eisel–Lemire step for a non-zero `significand`.
    static func approximated(significand: UInt64, exponent: Int, negative: Bool) -> Double? {
        // The significand with its top bit set; the binary exponent of the result follows from
        // log2(10) ≈ 217706 / 2^16 (exact enough over the table's range).
        let leadingZeros = significand.leadingZeroBitCount
        let normalized = significand << UInt64(leadingZeros)
        var binaryExponent = UInt64(truncatingIfNeeded: ((217_706 &* exponent) >> 16) &+ 64 &+ 1023 &- leadingZeros)
        let row = (exponent &- smallestExponent) &* 2
        // The product with the power's upper 64 bits; when its low bits are all ones the truncated
        // power's lower 64 bits may carry into them, so they are added in.
        var (high, low) = normalized.multipliedFullWidth(by: powersOfTen[row])
        if high & 0x1FF == 0x1FF, low &+ normalized < normalized {
            let (carryHigh, carryLow) = normalized.multipliedFullWidth(by: powersOfTen[row + 1])
            var mergedHigh = high
            let mergedLow = low &+ carryHigh
            if mergedLow < low { mergedHigh &+= 1 }
            // Still all ones: the truncation's error could decide the rounding.
            if mergedHigh & 0x1FF == 0x1FF, mergedLow &+ 1 == 0, carryLow &+ normalized < normalized { return nil }
            high = mergedHigh
            low = mergedLow
        }
        // The top 54 bits: 53 and one for rounding.
        let topBit = high >> 63
        var mantissa = high >> (topBit + 9)
        binaryExponent &-= 1 ^ topBit
        // Exactly halfway between two Doubles, as far as these bits tell: not decided here.
        if low == 0, high & 0x1FF == 0, mantissa & 3 == 1 { return nil }
        mantissa += mantissa & 1
        mantissa >>= 1
        if mantissa >> 53 > 0 {
            mantissa >>= 1
            binaryExponent &+= 1
        }
        // Zero (or below, wrapped) is subnormal, 0x7FF and above infinite: both left to the general path.
        if binaryExponent &- 1 >= 0x7FF - 1 { return nil }
        let sign: UInt64 = negative ? 1 << 63 : 0
        return Double(bitPattern: sign | binaryExponent << 52 | mantissa & 0x000F_FFFF_FFFF_FFFF)
    }

    /// 10^e for e in ``smallestExponent``...``largestExponent``, each as the upper and lower 64 bits
    /// of its first 128 significant bits, rounded down (exact from 10^0 to 10^55).
    static let powersOfTen: [UInt64] = [
        0xA87F_EA27_A539_E9A5, 0x3F23_98D7_47B3_6224,  // 1e-64
        0xD29F_E4B1_8E88_640E, 0x8EEC_7F0D_19A0_3AAD,  // 1e-63
        0x83A3_EEEE_F915_3E89, 0x1953_CF68_3004_24AC,  // 1e-62
        0xA48C_EAAA_B75A_8E2B, 0x5FA8_C342_3C05_2DD7,  // 1e-61
        0xCDB0_2555_6531_31B6, 0x3792_F412_CB06_794D,  // 1e-60
        0x808E_1755_5F3E_BF11, 0xE2BB_D88B_BEE4_0BD0,  // 1e-59
        0xA0B1_9D2A_B70E_6ED6, 0x5B6A_CEAE_AE9D_0EC4,  // 1e-58
        0xC8DE_0475_64D2_0A8B, 0xF245_825A_5A44_5275,  // 1e-57
        0xFB15_8592_BE06_8D2E, 0xEED6_E2F0_F0D5_6712,  // 1e-56
        0x9CED_737B_B6C4_183D, 0x5546_4DD6_9685_606B,  // 1e-55
        0xC428_D05A_A475_1E4C, 0xAA97_E14C_3C26_B886,  // 1e-54
        0xF533_0471_4D92_65DF, 0xD53D_D99F_4B30_66A8,  // 1e-53
        0x993F_E2C6_D07B_7FAB, 0xE546_A803_8EFE_4029,  // 1e-52
        0xBF8F_DB78_849A_5F96, 0xDE98_5204_72BD_D033,  // 1e-51
        0xEF73_D256_A5C0_F77C, 0x963E_6685_8F6D_4440,  // 1e-50
        0x95A8_6376_2798_9AAD, 0xDDE7_0013_79A4_4AA8,  // 1e-49
        0xBB12_7C53_B17E_C159, 0x5560_C018_580D_5D52,  // 1e-48
        0xE9D7_1B68_9DDE_71AF, 0xAAB8_F01E_6E10_B4A6,  // 1e-47
        0x9226_7121_62AB_070D, 0xCAB3_9613_04CA_70E8,  // 1e-46
        0xB6B0_0D69_BB55_C8D1, 0x3D60_7B97_C5FD_0D22,  // 1e-45
        0xE45C_10C4_2A2B_3B05, 0x8CB8_9A7D_B77C_506A,  // 1e-44
        0x8EB9_8A7A_9A5B_04E3, 0x77F3_608E_92AD_B242,  // 1e-43
        0xB267_ED19_40F1_C61C, 0x55F0_38B2_3759_1ED3,  // 1e-42
        0xDF01_E85F_912E_37A3, 0x6B6C_46DE_C52F_6688,  // 1e-41
        0x8B61_313B_BABC_E2C6, 0x2323_AC4B_3B3D_A015,  // 1e-40
        0xAE39_7D8A_A96C_1B77, 0xABEC_975E_0A0D_081A,  // 1e-39
        0xD9C7_DCED_53C7_2255, 0x96E7_BD35_8C90_4A21,  // 1e-38
        0x881C_EA14_545C_7575, 0x7E50_D641_77DA_2E54,  // 1e-37
        0xAA24_2499_6973_92D2, 0xDDE5_0BD1_D5D0_B9E9,  // 1e-36
        0xD4AD_2DBF_C3D0_7787, 0x955E_4EC6_4B44_E864,  // 1e-35
        0x84EC_3C97_DA62_4AB4, 0xBD5A_F13B_EF0B_113E,  // 1e-34
        0xA627_4BBD_D0FA_DD61, 0xECB1_AD8A_EACD_D58E,  // 1e-33
        0xCFB1_1EAD_4539_94BA, 0x67DE_18ED_A581_4AF2,  // 1e-32
        0x81CE_B32C_4B43_FCF4, 0x80EA_CF94_8770_CED7,  // 1e-31
        0xA242_5FF7_5E14_FC31, 0xA125_8379_A94D_028D,  // 1e-30
        0xCAD2_F7F5_359A_3B3E, 0x096E_E458_13A0_4330,  // 1e-29
        0xFD87_B5F2_8300_CA0D, 0x8BCA_9D6E_1888_53FC,  // 1e-28
        0x9E74_D1B7_91E0_7E48, 0x775E_A264_CF55_347D,  // 1e-27
        0xC612_0625_7658_9DDA, 0x9536_4AFE_032A_819D,  // 1e-26
        0xF796_87AE_D3EE_C551, 0x3A83_DDBD_83F5_2204,  // 1e-25
        0x9ABE_14CD_4475_3B52, 0xC492_6A96_7279_3542,  // 1e-24
        0xC16D_9A00_9592_8A27, 0x75B7_053C_0F17_8293,  // 1e-23
        0xF1C9_0080_BAF7_2CB1, 0x5324_C68B_12DD_6338,  // 1e-22
        0x971D_A050_74DA_7BEE, 0xD3F6_FC16_EBCA_5E03,  // 1e-21
        0xBCE5_0864_9211_1AEA, 0x88F4_BB1C_A6BC_F584,  // 1e-20
        0xEC1E_4A7D_B695_61A5, 0x2B31_E9E3_D06C_32E5,  // 1e-19
        0x9392_EE8E_921D_5D07, 0x3AFF_322E_6243_9FCF,  // 1e-18
        0xB877_AA32_36A4_B449, 0x09BE_FEB9_FAD4_87C2,  // 1e-17
        0xE695_94BE_C44D_E15B, 0x4C2E_BE68_7989_A9B3,  // 1e-16
        0x901D_7CF7_3AB0_ACD9, 0x0F9D_3701_4BF6_0A10,  // 1e-15
        0xB424_DC35_095C_D80F, 0x5384_84C1_9EF3_8C94,  // 1e-14
        0xE12E_1342_4BB4_0E13, 0x2865_A5F2_06B0_6FB9,  // 1e-13
        0x8CBC_CC09_6F50_88CB, 0xF93F_87B7_442E_45D3,  // 1e-12
        0xAFEB_FF0B_CB24_AAFE, 0xF78F_69A5_1539_D748,  // 1e-11
        0xDBE6_FECE_BDED_D5BE, 0xB573_440E_5A88_4D1B,  // 1e-10
        0x8970_5F41_36B4_A597, 0x3168_0A88_F895_3030,  // 1e-9
        0xABCC_7711_8461_CEFC, 0xFDC2_0D2B_36BA_7C3D,  // 1e-8
        0xD6BF_94D5_E57A_42BC, 0x3D32_9076_0469_1B4C,  // 1e-7
        0x8637_BD05_AF6C_69B5, 0xA63F_9A49_C2C1_B10F,  // 1e-6
        0xA7C5_AC47_1B47_8423, 0x0FCF_80DC_3372_1D53,  // 1e-5
        0xD1B7_1758_E219_652B, 0xD3C3_6113_404E_A4A8,  // 1e-4
        0x8312_6E97_8D4F_DF3B, 0x645A_1CAC_0831_26E9,  // 1e-3
        0xA3D7_0A3D_70A3_D70A, 0x3D70_A3D7_0A3D_70A3,  // 1e-2
        0xCCCC_CCCC_CCCC_CCCC, 0xCCCC_CCCC_CCCC_CCCC,  // 1e-1
        0x8000_0000_0000_0000, 0x0000_0000_0000_0000,  // 1e0
        0xA000_0000_0000_0000, 0x0000_0000_0000_0000,  // 1e1
        0xC800_0000_0000_0000, 0x0000_0000_0000_0000,  // 1e2
        0xFA00_0000_0000_0000, 0x0000_0000_0000_0000,  // 1e3
        0x9C40_0000_0000_0000, 0x0000_0000_0000_0000,  // 1e4
        0xC350_0000_0000_0000, 0x0000_0000_0000_0000,  // 1e5
        0xF424_0000_0000_0000, 0x0000_0000_0000_0000,  // 1e6
        0x9896_8000_0000_0000, 0x0000_0000_0000_0000,  // 1e7
        0xBEBC_2000_0000_0000, 0x0000_0000_0000_0000,  // 1e8
        0xEE6B_2800_0000_0000, 0x0000_0000_0000_0000,  // 1e9
        0x9502_F900_0000_0000, 0x0000_0000_0000_0000,  // 1e10
        0xBA43_B740_0000_0000, 0x0000_0000_0000_0000,  // 1e11
        0xE8D4_A510_0000_0000, 0x0000_0000_0000_0000,  // 1e12
        0x9184_E72A_0000_0000, 0x0000_0000_0000_0000,  // 1e13
        0xB5E6_20F4_8000_0000, 0x0000_0000_0000_0000,  // 1e14
        0xE35F_A931_A000_0000, 0x0000_0000_0000_0000,  // 1e15
        0x8E1B_C9BF_0400_0000, 0x0000_0000_0000_0000,  // 1e16
        0xB1A2_BC2E_C500_0000, 0x0000_0000_0000_0000,  // 1e17
        0xDE0B_6B3A_7640_0000, 0x0000_0000_0000_0000,  // 1e18
        0x8AC7_2304_89E8_0000, 0x0000_0000_0000_0000,  // 1e19
        0xAD78_EBC5_AC62_0000, 0x0000_0000_0000_0000,  // 1e20
        0xD8D7_26B7_177A_8000, 0x0000_0000_0000_0000,  // 1e21
        0x8786_7832_6EAC_9000, 0x0000_0000_0000_0000,  // 1e22
        0xA968_163F_0A57_B400, 0x0000_0000_0000_0000,  // 1e23
        0xD3C2_1BCE_CCED_A100, 0x0000_0000_0000_0000,  // 1e24
        0x8459_5161_4014_84A0, 0x0000_0000_0000_0000,  // 1e25
        0xA56F_A5B9_9019_A5C8, 0x0000_0000_0000_0000,  // 1e26
        0xCECB_8F27_F420_0F3A, 0x0000_0000_0000_0000,  // 1e27
        0x813F_3978_F894_0984, 0x4000_0000_0000_0000,  // 1e28
        0xA18F_07D7_36B9_0BE5, 0x5000_0000_0000_0000,  // 1e29
        0xC9F2_C9CD_0467_4EDE, 0xA400_0000_0000_0000,  // 1e30
        0xFC6F_7C40_4581_2296, 0x4D00_0000_0000_0000,  // 1e31
        0x9DC5_ADA8_2B70_B59D, 0xF020_0000_0000_0000,  // 1e32
        0xC537_1912_364C_E305, 0x6C28_0000_0000_0000,  // 1e33
        0xF684_DF56_C3E0_1BC6, 0xC732_0000_0000_0000,  // 1e34
        0x9A13_0B96_3A6C_115C, 0x3C7F_4000_0000_0000,  // 1e35
        0xC097_CE7B_C907_15B3, 0x4B9F_1000_0000_0000,  // 1e36
        0xF0BD_C21A_BB48_DB20, 0x1E86_D400_0000_0000,  // 1e37
        0x9676_9950_B50D_88F4, 0x1314_4480_0000_0000,  // 1e38
        0xBC14_3FA4_E250_EB31, 0x17D9_55A0_0000_0000,  // 1e39
        0xEB19_4F8E_1AE5_25FD, 0x5DCF_AB08_0000_0000,  // 1e40
        0x92EF_D1B8_D0CF_37BE, 0x5AA1_CAE5_0000_0000,  // 1e41
        0xB7AB_C627_0503_05AD, 0xF14A_3D9E_4000_0000,  // 1e42
        0xE596_B7B0_C643_C719, 0x6D9C_CD05_D000_0000,  // 1e43
        0x8F7E_32CE_7BEA_5C6F, 0xE482_0023_A200_0000,  // 1e44
        0xB35D_BF82_1AE4_F38B, 0xDDA2_802C_8A80_0000,  // 1e45
        0xE035_2F62_A19E_306E, 0xD50B_2037_AD20_0000,  // 1e46
        0x8C21_3D9D_A502_DE45, 0x4526_F422_CC34_0000,  // 1e47
        0xAF29_8D05_0E43_95D6, 0x9670_B12B_7F41_0000,  // 1e48
        0xDAF3_F046_51D4_7B4C, 0x3C0C_DD76_5F11_4000,  // 1e49
        0x88D8_762B_F324_CD0F, 0xA588_0A69_FB6A_C800,  // 1e50
        0xAB0E_93B6_EFEE_0053, 0x8EEA_0D04_7A45_7A00,  // 1e51
        0xD5D2_38A4_ABE9_8068, 0x72A4_9045_98D6_D880,  // 1e52
        0x85A3_6366_EB71_F041, 0x47A6_DA2B_7F86_4750,  // 1e53
        0xA70C_3C40_A64E_6C51, 0x9990_90B6_5F67_D924,  // 1e54
        0xD0CF_4B50_CFE2_0765, 0xFFF4_B4E3_F741_CF6D,  // 1e55
        0x8281_8F12_81ED_449F, 0xBFF8_F10E_7A89_21A4,  // 1e56
        0xA321_F2D7_2268_95C7, 0xAFF7_2D52_192B_6A0D,  // 1e57
        0xCBEA_6F8C_EB02_BB39, 0x9BF4_F8A6_9F76_4490,  // 1e58
        0xFEE5_0B70_25C3_6A08, 0x02F2_36D0_4753_D5B4,  // 1e59
        0x9F4F_2726_179A_2245, 0x01D7_6242_2C94_6590,  // 1e60
        0xC722_F0EF_9D80_AAD6, 0x424D_3AD2_B7B9_7EF5,  // 1e61
        0xF8EB_AD2B_84E0_D58B, 0xD2E0_8987_65A7_DEB2,  // 1e62
        0x9B93_4C3B_330C_8577, 0x63CC_55F4_9F88_EB2F,  // 1e63
        0xC278_1F49_FFCF_A6D5, 0x3CBF_6B71_C76B_25FB,  // 1e64
    ]
}
